"""Federated unlearning after training: ask for statistics, solve the edit, broadcast, evaluate.

With ``unlearn-request`` set, the ServerApp forgets after its last round:

1. ``wash-statistics`` query (the trained weights go with it): every client replies with
   ``d x d`` and ``d x C`` sums over its keys (:mod:`client.unlearning`); the shapes are
   checked here, so no node-level rows can arrive unnoticed.
2. The server sums them and lists candidate edits (:func:`unlearn.wash.solve_edit` for the
   held-out rule's :math:`\\lambda` grid); a ``wash-heldout`` query returns, per client, how
   many of its validation predictions each edit changes; the smallest :math:`\\lambda` within
   the tolerance wins (:func:`unlearn.wash.smallest_within`), as in-process.
3. ``unlearn-evaluate`` queries score the original and the edited weights (correct and
   total counts per client, pooled by :func:`unlearn.evaluate.accuracies`).

If a client that holds data to forget does not answer (the requesting client of a
``client:``/``nodes:`` request; any client for a ``class:`` request, since the server
cannot know who holds the class), the edit cannot be computed: the server retrains from
scratch, with the same rounds and strategy, on the clients that answered, each training
without its forgotten nodes, and says so in the log and in ``unlearn.json``.
``unlearn-method='retrain'`` asks for that retraining directly; ``unlearn-method='laf'`` runs
label-agnostic forgetting as federated rounds (:func:`laf_rounds`: one LAF alternation per
client per round, FedAvg of the encoders, at most 10% of the training rounds) in which only
the clients holding data to forget have forget terms; ``unlearn-method='laf+ft'`` follows them
with :func:`unlearn.baselines.finetune_rounds` FedAvg rounds on the clients that stay, without the forgotten
nodes. ``unlearn-method='federaser'`` replays training from the clients' updates the server
recorded during training (:func:`history_recorder`, :mod:`unlearn.federaser`): one
calibration round per window on the clients that stay, each trained without its forgotten
nodes, each client's update rescaled to its recorded step length. It needs nothing from a
client that is gone, so it never falls back. Results:
``unlearn.json`` and ``unlearn.md`` in the run directory. Unlike ``stamen unlearn``, no
membership-inference AUC is computed here: it needs per-node losses, which stay on clients.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from logging import INFO, WARNING
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MessageType, RecordDict
from flwr.common import log
from flwr.serverapp import Grid

from contract import protocol as p
from contract.run_config import RunConfig
from server.loop import exchange, run_rounds
from server.rundir import atomic_write

if TYPE_CHECKING:
    from unlearn.federaser import UpdateHistory

HEAD_WEIGHT, HEAD_BIAS = "head.weight", "head.bias"


class SubGrid:
    """The grid restricted to some nodes: what the strategy samples from when retraining."""

    def __init__(self, grid: Grid, node_ids: list[int]) -> None:
        self.grid, self.node_ids = grid, list(node_ids)

    def get_node_ids(self) -> list[int]:
        return list(self.node_ids)

    def send_and_receive(self, messages, *, timeout=None):
        return self.grid.send_and_receive(messages, timeout=timeout)


def _query(kind: str, request: str, arrays: ArrayRecord, node_ids: list[int], extra: RecordDict | None = None):
    messages = []
    for node_id in node_ids:
        content = RecordDict({p.ARRAYS: arrays, p.CONFIG: ConfigRecord({p.QUERY: kind, p.UNLEARN_REQUEST: request})})
        for name, record in (extra or {}).items():
            content[name] = record
        messages.append(Message(content=content, dst_node_id=node_id, message_type=MessageType.QUERY))
    return messages


def check_statistics(record: ArrayRecord, dim: int, num_outputs: int) -> dict[str, np.ndarray]:
    """The three sums of a client's reply as float64 arrays, after checking they are exactly
    ``d x d``, ``d x d`` and ``d x C`` (anything else could carry node-level rows)."""
    expected = {p.KEEP_GRAM: (dim, dim), p.FORGET_GRAM: (dim, dim), p.FORGET_CROSS: (dim, num_outputs)}
    if set(record) != set(expected):
        raise RuntimeError(f"wash statistics must hold exactly {sorted(expected)}, got {sorted(record)}")
    arrays = {name: record[name].numpy() for name in expected}
    for name, shape in expected.items():
        if arrays[name].shape != shape or arrays[name].dtype != np.float64:
            raise RuntimeError(
                f"wash statistics {name!r} must be float64 {shape}, got {arrays[name].dtype} {arrays[name].shape}"
            )
    return arrays


def edited_arrays(arrays: ArrayRecord, delta: np.ndarray) -> ArrayRecord:
    """``arrays`` with ``[W, b] += delta`` on the head (``delta``: ``C x (d_h + 1)``)."""
    weight, bias = arrays[HEAD_WEIGHT].numpy(), arrays[HEAD_BIAS].numpy()
    new = {
        HEAD_WEIGHT: (weight + delta[:, :-1]).astype(weight.dtype),
        HEAD_BIAS: (bias + delta[:, -1]).astype(bias.dtype),
    }
    return ArrayRecord({name: Array(new[name]) if name in new else array for name, array in arrays.items()})


def holders_missing(request: str, partitions: dict[int, int], num_partitions: int) -> list[int]:
    """Partitions that hold data to forget but did not answer (``partitions``: node id -> partition)."""
    kind, _, rest = request.partition(":")
    answered = set(partitions.values())
    holders = range(num_partitions) if kind == "class" else [int(rest.split(":")[0])]
    return [i for i in holders if i not in answered]


def laf_rounds(training_rounds: int) -> int:
    """Federated LAF rounds, one alternation each: as many as in-process LAF's steps, at most 10% of
    the training rounds (at least one)."""
    from unlearn.laf import LAFConfig

    return max(1, min(LAFConfig().steps, training_rounds // 10))


def wash_federated(
    grid: Grid, request: str, arrays: ArrayRecord, replies: list[Message], timeout: float, min_clients: int
) -> tuple[ArrayRecord, dict[str, Any]]:
    """Steps 2 of the module docstring: sum the statistics, pick lambda with the clients, edit."""
    import torch  # the solver's linear algebra loads only when a run forgets

    from unlearn.wash import EditStatistics, WashConfig, candidate_lambdas, smallest_within, solve_edit, total

    num_outputs, hidden = arrays[HEAD_WEIGHT].shape
    dim = hidden + 1
    stats = []
    for reply in replies:
        sums = check_statistics(reply.content[p.WASH_STATISTICS], dim, num_outputs)
        metrics = reply.content[p.METRICS]
        stats.append(
            EditStatistics(
                *(torch.from_numpy(sums[name]) for name in (p.KEEP_GRAM, p.FORGET_GRAM, p.FORGET_CROSS)),
                num_keep=int(metrics[p.NUM_KEEP]),
                num_forget=int(metrics[p.NUM_FORGET]),
            )
        )
    summed = total(stats)
    if summed.num_forget == 0:
        raise RuntimeError(f"unlearn-request {request!r} selects no training nodes on any client")
    lambdas = candidate_lambdas(summed)
    deltas = [solve_edit(summed, lam) for lam in lambdas]
    edits = ArrayRecord({f"edit-{i}": Array(delta.numpy()) for i, delta in enumerate(deltas)})
    node_ids = [reply.metadata.src_node_id for reply in replies]
    answers = exchange(
        grid,
        _query(p.WASH_HELDOUT_QUERY, request, arrays, node_ids, RecordDict({p.WASH_EDITS: edits})),
        timeout,
        min_clients,
        "unlearning (held-out check)",
    )
    counts = [a.content[p.METRICS] for a in answers]
    changed = [sum(int(m[f"{p.CHANGED}-{i}"]) for m in counts) for i in range(len(lambdas))]
    counted = sum(int(m[p.COUNTED]) for m in counts)
    lam = smallest_within(lambdas, changed, counted, WashConfig().tolerance)
    delta = deltas[lambdas.index(lam)].numpy()
    weight = np.concatenate([arrays[HEAD_WEIGHT].numpy(), arrays[HEAD_BIAS].numpy()[:, None]], axis=1)
    info = {
        "lambda": lam,
        "edit_ratio": float(np.linalg.norm(delta) / np.linalg.norm(weight)),
        "num_keep": summed.num_keep,
        "num_forget": summed.num_forget,
        "heldout_changed": changed[lambdas.index(lam)],
        "heldout_changed_per_lambda": changed,
        "heldout_counted": counted,
    }
    return edited_arrays(arrays, delta), info


def history_recorder(history: UpdateHistory) -> Callable[[int, ArrayRecord, list[Message]], None]:
    """The ``on_replies`` hook of :func:`server.loop.run_rounds` that records every client's update
    (its trained weights minus the weights sent) into ``history``, by partition id."""

    def record(server_round: int, sent: ArrayRecord, replies: list[Message]) -> None:
        start = sent.to_torch_state_dict()
        states = {
            int(reply.content[p.METRICS][p.PARTITION_ID]): reply.content[p.ARRAYS].to_torch_state_dict()
            for reply in replies
        }
        history.record(server_round, start, states)

    return record


def federaser_federated(
    grid: Grid, request: str, history: UpdateHistory, strategy, timeout: float, min_clients: int
) -> ArrayRecord:
    """Replay ``history`` on ``grid``'s clients (those that stay): one calibration round per window,
    each client training without its forgotten nodes, its update rescaled to its recorded length."""
    from unlearn.federaser import replay_step

    arrays = ArrayRecord(history.initial)
    count = len(history.windows)
    for index, window in enumerate(history.windows):
        train = ConfigRecord({p.UNLEARN_RETRAIN: request})
        messages = strategy.configure_train(index + 1, arrays, train, grid)
        replies = exchange(grid, messages, timeout, min_clients, f"federaser calibration {index + 1}/{count}")
        calibrated = (
            (
                int(reply.content[p.METRICS][p.PARTITION_ID]),
                reply.content[p.ARRAYS].to_torch_state_dict(),
                int(reply.content[p.METRICS][p.NUM_EXAMPLES]),
            )
            for reply in replies
        )
        step = replay_step(arrays.to_torch_state_dict(), calibrated, window)
        if step is not None:
            arrays = ArrayRecord(step)
        log(INFO, "stamen: federaser calibration round %d/%d", index + 1, count)
    return arrays


def evaluate_federated(
    grid: Grid, request: str, arrays: ArrayRecord, node_ids: list[int], timeout: float, min_clients: int
) -> dict[str, Any]:
    """Pooled accuracies of ``arrays`` (:func:`unlearn.evaluate.accuracies`) from the clients' counts."""
    from unlearn.evaluate import accuracies
    from unlearn.requests import Request

    replies = exchange(
        grid,
        _query(p.UNLEARN_EVALUATE_QUERY, request, arrays, node_ids),
        timeout,
        min_clients,
        "unlearning (evaluation)",
    )
    by_partition = {int(r.content[p.METRICS][p.PARTITION_ID]): dict(r.content[p.METRICS]) for r in replies}
    kind, _, rest = request.partition(":")
    index = int(rest.split(":")[0])
    parsed = Request(kind, label=index) if kind == "class" else Request(kind, client=index)
    counts = list(by_partition.values())
    return accuracies(counts, parsed, by_partition.get(index) if kind != "class" else None)


def unlearn_federation(
    grid: Grid,
    config: RunConfig,
    arrays: ArrayRecord,
    strategy_factory,
    aggregates: bool,
    run_dir: Path,
    training_seconds: float,
    history: UpdateHistory | None = None,
) -> tuple[dict[str, Any], ArrayRecord]:
    """Forget ``config.unlearn_request`` from the trained ``arrays``; write the results and return
    them with the unlearned weights (``federaser`` replays ``history``, recorded in training)."""
    request, timeout, min_clients = config.unlearn_request, config.round_timeout, config.min_clients
    if len(arrays) == 0:
        raise RuntimeError(f"unlearn-request needs a global model; algorithm {config.algorithm!r} does not aggregate")
    node_ids = list(grid.get_node_ids())
    log(INFO, "stamen: unlearning %s (%s) on %d clients", request, config.unlearn_method, len(node_ids))
    started = time.perf_counter()
    # The statistics query is also the roll call: who answers decides between the method and retraining.
    replies = list(grid.send_and_receive(_query(p.WASH_STATISTICS_QUERY, request, arrays, node_ids), timeout=timeout))
    valid = [r for r in replies if not r.has_error()]
    for reply in replies:
        if reply.has_error():
            log(WARNING, "unlearning: node %s did not answer: %s", reply.metadata.src_node_id, reply.error.reason)
    if not valid:
        reasons = sorted({r.error.reason for r in replies})
        raise RuntimeError(f"unlearning: no client answered the statistics query ({'; '.join(reasons)})")
    partitions = {r.metadata.src_node_id: int(r.content[p.METRICS][p.PARTITION_ID]) for r in valid}
    missing = holders_missing(request, partitions, len(node_ids))
    result: dict[str, Any] = {"request": request, "method": config.unlearn_method, "clients": len(node_ids)}

    def staying_nodes(what: str) -> list[int]:
        kind, _, rest = request.partition(":")
        leaving = int(rest) if kind == "client" else None
        nodes = [node for node, part in partitions.items() if part != leaving]
        if len(nodes) < min_clients:
            raise RuntimeError(f"unlearning: {what} needs min-clients={min_clients} clients, only {len(nodes)} remain")
        return nodes

    def train_without_forgotten(rounds: int, initial: ArrayRecord | None, what: str) -> ArrayRecord:
        """``rounds`` FedAvg rounds on the clients that stay, each without its forgotten nodes."""
        nodes = staying_nodes(what)
        return run_rounds(
            SubGrid(grid, nodes),
            strategy_factory(config),
            rounds,
            aggregates=aggregates,
            min_clients=min_clients,
            timeout=timeout,
            on_row=lambda row: log(INFO, "stamen: %s round %d/%d", what, row["round"], rounds),
            train_config=ConfigRecord({p.UNLEARN_RETRAIN: request}),
            initial=initial,
        )

    if config.unlearn_method == "federaser":
        if history is None:
            raise RuntimeError("unlearning: federaser needs the clients' updates recorded during training; none were")
        if missing:
            log(WARNING, "unlearning: client(s) %s did not answer; the replay goes on without them", missing)
        nodes = staying_nodes("federaser")
        unlearned = federaser_federated(
            SubGrid(grid, nodes), request, history, strategy_factory(config), timeout, min_clients
        )
        result.update({"method_used": "federaser", "federaser": {"calibration_rounds": len(history.windows)}})
    elif config.unlearn_method == "wash" and not missing:
        unlearned, info = wash_federated(grid, request, arrays, valid, timeout, min_clients)
        result.update({"method_used": "wash", "wash": info})
    elif config.unlearn_method in ("laf", "laf+ft") and not missing:
        rounds = laf_rounds(config.num_server_rounds)
        unlearned = run_rounds(
            SubGrid(grid, list(partitions)),
            strategy_factory(config),
            rounds,
            aggregates=aggregates,
            min_clients=min_clients,
            timeout=timeout,
            on_row=lambda row: log(INFO, "stamen: LAF round %d/%d", row["round"], rounds),
            train_config=ConfigRecord({p.UNLEARN_LAF: request}),
            initial=arrays,
        )
        result.update({"method_used": config.unlearn_method, "laf": {"rounds": rounds}})
        if config.unlearn_method == "laf+ft":
            from unlearn.baselines import finetune_rounds

            tuning = finetune_rounds(config.num_server_rounds)
            unlearned = train_without_forgotten(tuning, unlearned, "fine-tuning")
            result["finetune"] = {"rounds": tuning}
    else:
        if missing:
            log(
                WARNING,
                "unlearning: client(s) %s hold data to forget and did not answer; falling back to retraining "
                "from scratch on the %d clients that did",
                missing,
                len(valid),
            )
            result["fallback"] = f"client(s) {missing} did not answer: retrained on the other clients"
        unlearned = train_without_forgotten(config.num_server_rounds, None, "retraining")
        result["method_used"] = "retrain"
    result["seconds"] = time.perf_counter() - started
    result["training_seconds"] = training_seconds
    result["time_ratio_to_training"] = result["seconds"] / training_seconds if training_seconds > 0 else None
    answering = list(partitions)
    result["original"] = evaluate_federated(grid, request, arrays, answering, timeout, min_clients)
    result["unlearned"] = evaluate_federated(grid, request, unlearned, answering, timeout, min_clients)
    result["evaluated_clients"] = sorted(partitions.values())
    atomic_write(run_dir / "unlearn.json", json.dumps(result, indent=2) + "\n")
    table = markdown_table(result)
    atomic_write(run_dir / "unlearn.md", f"# Unlearning {request} ({result['method_used']})\n\n{table}\n")
    log(INFO, "stamen: unlearning %s by %s in %.2f s\n%s", request, result["method_used"], result["seconds"], table)
    return result, unlearned


def markdown_table(result: dict[str, Any]) -> str:
    """Original and unlearned figures side by side (figures that do not apply are left out)."""
    from unlearn.report import COLUMNS

    shown = [(key, label) for key, label in COLUMNS if result["original"].get(key) is not None]
    lines = ["| model | " + " | ".join(label for _, label in shown) + " |", "|---" * (len(shown) + 1) + "|"]
    for name in ("original", "unlearned"):
        lines.append(f"| {name} | " + " | ".join(f"{result[name][key]:.3f}" for key, _ in shown) + " |")
    return "\n".join(lines)
