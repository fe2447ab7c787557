"""What the round loop (:mod:`stamen.server.loop`) reads from a client's reply, checked before anything reads it.

A reply that lacks a key of :mod:`stamen.contract.protocol` the loop needs, holds a value of the wrong kind,
or carries weights of other names or shapes than the others' is *malformed*: the loop names the client in
the round's row (``failed_clients``) and goes on without it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord

from stamen.contract import protocol as p

ReplyCheck = Callable[[list[Message]], dict[int, str]]  # replies -> {index: the problem of a malformed one}

# What the loop reads from a reply (stamen.contract.protocol): a training reply needs all of TRAIN_METRICS,
# an evaluation reply EVALUATE_METRICS; these and OPTIONAL_METRICS, where present, must be single
# numbers, and _COUNTS non-negative integers.
TRAIN_SECONDS_KEYS = (p.SETUP_SECONDS, p.TRAIN_SECONDS, p.EVAL_SECONDS, p.PACK_SECONDS)
EVALUATE_METRICS = (p.PARTITION_ID, p.NUM_VAL, p.NUM_TEST)
TRAIN_METRICS = (*EVALUATE_METRICS, p.NUM_EXAMPLES, p.TRAIN_LOSS, *TRAIN_SECONDS_KEYS)
_CORRECT = (p.GLOBAL_VAL_CORRECT, p.GLOBAL_TEST_CORRECT, p.LOCAL_VAL_CORRECT, p.LOCAL_TEST_CORRECT)
_SETTING_COUNTS = tuple(p.setting_key(model, s) for s in p.SETTINGS for model in ("num", "global", "local"))
OPTIONAL_METRICS = (*_CORRECT, *_SETTING_COUNTS, p.EPSILON, p.TRAIN_REGULARISER)
_COUNTS = frozenset({*EVALUATE_METRICS, p.NUM_EXAMPLES, *_CORRECT, *_SETTING_COUNTS})


def metrics_problem(reply: Message, required: Iterable[str]) -> str | None:
    """What the reply's metric record lacks (None: it has what the loop reads)."""
    metrics = reply.content.get(p.METRICS)
    if not isinstance(metrics, MetricRecord):
        return f"no {p.METRICS!r} metric record"
    missing = [key for key in required if key not in metrics]
    if missing:
        return f"no {', '.join(map(repr, missing))} in its {p.METRICS!r} record"
    for key in [key for key in (*required, *OPTIONAL_METRICS) if key in metrics]:
        value = metrics[key]
        if not isinstance(value, (int, float)) or (key in _COUNTS and (not isinstance(value, int) or value < 0)):
            return f"{key!r} is {value!r}, not a {'count' if key in _COUNTS else 'single number'}"
    return None


def _arrays_signature(record: ArrayRecord) -> tuple:
    return tuple((name, tuple(array.shape)) for name, array in record.items())


def _describe(signature: tuple) -> str:
    return "[" + ", ".join(f"{name}{list(shape)}" for name, shape in signature) + "]"


def train_check(aggregated: ArrayRecord | None, aggregates: bool) -> ReplyCheck:
    """The training replies' check: metrics, client info and, when aggregating, weights.

    An aggregating algorithm needs each reply's ``arrays`` record with the names and
    shapes of the weights it ``aggregated`` from the previous round's replies; in the
    first round (no weights, or initial ones that clients may extend), those most replies
    share. (Dtypes are not compared: averaging turns integer buffers into floats.)
    Flower's strategies also require every reply's
    metric record to hold the same keys: a reply whose keys differ from most replies'
    is malformed. When no signature is shared by more replies than any other, every
    reply of the tied signatures is refused rather than one guessed right.
    """

    def check(replies: list[Message]) -> dict[int, str]:
        problems: dict[int, str] = {}
        for index, reply in enumerate(replies):
            problem = metrics_problem(reply, TRAIN_METRICS)
            info = reply.content.get(p.CLIENT_INFO)
            if problem is None and (not isinstance(info, ConfigRecord) or p.DEVICE not in info):
                problem = f"no {p.CLIENT_INFO!r} config record with {p.DEVICE!r}"
            if problem is None and aggregates and not isinstance(reply.content.get(p.ARRAYS), ArrayRecord):
                problem = f"no {p.ARRAYS!r} array record"
            if problem is not None:
                problems[index] = problem
        if not aggregates:
            return problems
        expected = _arrays_signature(aggregated) if aggregated is not None and len(aggregated) > 0 else None
        signatures: dict[int, tuple] = {}
        for index, reply in enumerate(replies):
            if index in problems:
                continue
            arrays = _arrays_signature(reply.content[p.ARRAYS])
            if expected is not None and arrays != expected:
                problems[index] = f"weights {_describe(arrays)} differ from those sent {_describe(expected)}"
                continue
            keys = tuple(sorted(reply.content[p.METRICS].keys()))
            signatures[index] = (keys, arrays if expected is None else ())
        problems.update(_odd_ones_out(signatures))
        return problems

    return check


def _odd_ones_out(signatures: dict[int, tuple]) -> dict[int, str]:
    """The replies whose (metric keys, weights) differ from the one signature most replies share."""
    counts = Counter(signatures.values())
    if len(counts) <= 1:
        return {}
    (_, top), (_, runner_up) = counts.most_common(2)
    common = counts.most_common(1)[0][0] if top > runner_up else None
    odd: dict[int, str] = {}
    for index, signature in signatures.items():
        if signature == common:
            continue
        if common is None:
            odd[index] = "its metric keys or weights differ from other replies' and no version is shared by most"
        elif signature[0] != common[0]:
            differ = sorted(set(signature[0]) ^ set(common[0]))
            odd[index] = f"its metric keys differ from most replies' in {differ}"
        else:
            odd[index] = f"weights {_describe(signature[1])} differ from most replies' {_describe(common[1])}"
    return odd


def evaluate_check(replies: list[Message]) -> dict[int, str]:
    """The evaluation replies' check: the counts the pooled accuracies read."""
    problems = {index: metrics_problem(reply, EVALUATE_METRICS) for index, reply in enumerate(replies)}
    return {index: problem for index, problem in problems.items() if problem is not None}
