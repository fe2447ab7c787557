"""The federated round loop: Flower strategy calls, pooled metrics, one row per round.

A Flower strategy decides whom to sample and how to aggregate; this loop drives it
through its public methods (``configure_train``, ``aggregate_train``,
``configure_evaluate``) and the grid. It differs from ``Strategy.start`` in one
place: clients evaluate the model they receive before training and report it in
their training reply, so the global model of round ``r`` is evaluated during round
``r + 1`` at no extra message round. Only the last global model needs an evaluation
round of its own.

Rows are pooled over clients from counts: an accuracy is the number of correct
nodes over all clients divided by the number of nodes, i.e. the client average
weighted by client size.

A client that does not count in a round is named in the round's row with its
:class:`FailureCategory`: ``lost`` (no reply, node unreachable), ``error`` (its code
raised: Flower's error reply) or ``malformed`` (its reply lacks what the protocol
requires, checked before anything reads it). The round goes on without it while at
least ``min-clients`` valid replies remain; :class:`RunHealth` tells the caller
whether the run was degraded.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from enum import Enum
from logging import WARNING

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from stamen.contract import protocol as p
from stamen.contract.figures import TRAIN_LOSS, Row
from stamen.contract.identity import head_identity
from stamen.contract.tasks import Pooling
from stamen.server.checkpoint import Checkpoint
from stamen.server.divergence import DivergedError, check_round
from stamen.server.privacy import epsilon_figures
from stamen.server.reply_checks import ReplyCheck, evaluate_check, train_check
from stamen.server.rows import (
    client_figures,
    client_processes,
    local_only,
    merge_global,
    pooled_figures,
    strategy_figures,
    training_figures,
)
from stamen.server.transport import send_and_receive


class FailureCategory(Enum):
    """Why a client's reply did not count; a row holds the value (``"lost"``, ...).

    - ``lost``: no reply by the timeout, or the SuperLink answered for the node (node
      unavailable, message expired): the node died or is unreachable.
    - ``error``: the client's code failed: Flower's error reply (the ClientApp raised,
      could not be loaded, crashed, a mod refused), with Flower's message kept.
    - ``malformed``: the client replied, but without what the protocol requires (a
      record, a metric the server reads, weights of the sent names and shapes).
    """

    LOST = "lost"
    ERROR = "error"
    MALFORMED = "malformed"


# Flower's error codes that mean "the message never reached a live client, or its reply was lost" (Flower 1.42's
# ErrorCode NODE_UNAVAILABLE, MESSAGE_UNAVAILABLE, REPLY_MESSAGE_UNAVAILABLE), and the node ID the SuperLink answers
# for a node with: both in flwr.common.constant, not public API, so copied (tests/test_flower_internals.py pins them).
_LOST_CODES = frozenset({5, 3, 4})
SUPERLINK_NODE_ID = 1


@dataclass(frozen=True)
class ClientFailure:
    """One client that did not count in a round (or in an exchange named ``stage``).

    Attributes:
        node_id: the Flower node the message went to.
        category: lost, error or malformed.
        reason: what happened, in words (for ``error``, Flower's error message as received).
        partition_id: the client's partition, when it ever sent a valid reply (None: unknown).
        error_code: Flower's error code of an error reply (None: no error reply).
        stage: the exchange it failed in, e.g. ``"round 3"`` or ``"final evaluation"``.
    """

    node_id: int
    category: FailureCategory
    reason: str
    partition_id: int | None = None
    error_code: int | None = None
    stage: str = ""

    def row(self) -> Row:
        """The JSON form in a round's ``failed_clients`` (the category as its string value)."""
        return {
            "node_id": self.node_id,
            "partition_id": self.partition_id,
            "category": self.category.value,
            "reason": self.reason,
            "error_code": self.error_code,
        }

    def name(self) -> str:
        partition = f" (partition {self.partition_id})" if self.partition_id is not None else ""
        return f"node {self.node_id}{partition}"


@dataclass
class RunHealth:
    """Every client failure the round loop met, for the caller to judge the run.

    Pass one to :func:`run_rounds` (``health=``); it fills ``failures`` as rounds go,
    also when the run ends in :class:`TooFewClientsError`. A run is ``degraded`` when a
    client's code failed or a reply broke the protocol (``error``, ``malformed``): its
    results lack those clients for a reason that is a fault, not a dropout. ``lost``
    clients are tolerated down to ``min-clients`` by design; ``count`` tells how many.
    """

    failures: list[ClientFailure] = field(default_factory=list)

    def count(self, category: FailureCategory) -> int:
        return sum(failure.category is category for failure in self.failures)

    @property
    def degraded(self) -> bool:
        return any(failure.category is not FailureCategory.LOST for failure in self.failures)


class ReportsHealth:
    """A strategy with message exchanges of its own (e.g. a phase before its rounds): :func:`run_rounds`
    hands it the run's :class:`RunHealth` to record their failures in, so a degraded run says so."""

    health: RunHealth | None = None


"""Given a round's replies without error, the index of each malformed one -> what it lacks."""


def _partition_order(reply: Message) -> tuple[int, int]:
    """A reply's place: its client's partition id when it reports one, else its node id."""
    metrics = reply.content.get(p.METRICS) if reply.content is not None else None
    if metrics is not None and isinstance(metrics.get(p.PARTITION_ID), int):
        return 0, int(metrics[p.PARTITION_ID])
    return 1, reply.metadata.src_node_id


def collect(
    grid: Grid,
    messages: Iterable[Message],
    timeout: float,
    check: ReplyCheck | None = None,
    partitions: dict[int, int] | None = None,
) -> tuple[list[Message], list[ClientFailure]]:
    """Send, wait up to ``timeout`` seconds; return the valid replies and the failures.

    A failure is a reply carrying an error (``error``, or ``lost`` when the SuperLink
    answered for a node it could not reach), no reply at all by the timeout (``lost``),
    or a reply that ``check`` finds malformed. ``partitions`` (node id -> partition id)
    names the failed clients' partitions where known.
    """
    messages = list(messages)
    replies = send_and_receive(grid, messages, timeout)
    partitions = partitions or {}
    # Message ids are set when the grid pushes the messages. An error reply made by the
    # SuperLink itself (node unavailable) comes from the SuperLink's own node id, so a
    # reply is matched to its client through the message it answers.
    sent = {message.metadata.message_id: message.metadata.dst_node_id for message in messages}

    def client_of(reply: Message) -> int:
        return sent.get(reply.metadata.reply_to_message_id, reply.metadata.src_node_id)

    failed = [_error_failure(reply, client_of(reply), partitions) for reply in replies if reply.has_error()]
    # Replies arrive in whatever order the engine delivers them; aggregates are sums of
    # floats, whose value depends on their order: take them in partition order.
    valid = sorted((reply for reply in replies if not reply.has_error()), key=_partition_order)
    answered = {client_of(reply) for reply in replies}
    failed += [
        ClientFailure(
            node_id=m.metadata.dst_node_id,
            category=FailureCategory.LOST,
            reason=f"no reply within round-timeout={timeout:g} s",
            partition_id=partitions.get(m.metadata.dst_node_id),
        )
        for m in messages
        if m.metadata.dst_node_id not in answered
    ]
    malformed = check(valid) if check is not None and valid else {}
    for index, problem in sorted(malformed.items()):
        node = client_of(valid[index])
        failed.append(
            ClientFailure(
                node_id=node,
                category=FailureCategory.MALFORMED,
                reason=f"malformed reply: {problem}",
                partition_id=_reported_partition(valid[index], partitions.get(node)),
            )
        )
    return [reply for index, reply in enumerate(valid) if index not in malformed], failed


def _error_failure(reply: Message, node: int, partitions: dict[int, int]) -> ClientFailure:
    """``lost`` when the SuperLink answered for the node (it never ran the client), else ``error``."""
    code = int(reply.error.code)
    from_superlink = reply.metadata.src_node_id == SUPERLINK_NODE_ID != node
    lost = code in _LOST_CODES or from_superlink
    return ClientFailure(
        node_id=node,
        category=FailureCategory.LOST if lost else FailureCategory.ERROR,
        reason=str(reply.error.reason),
        partition_id=partitions.get(node),
        error_code=code,
    )


def _reported_partition(reply: Message, known: int | None) -> int | None:
    metrics = reply.content.get(p.METRICS)
    value = metrics.get(p.PARTITION_ID) if isinstance(metrics, MetricRecord) else None
    return value if isinstance(value, int) else known


class RunPruned(Exception):
    """Raised by a caller's row observer (:func:`stamen.server.app.serve`'s ``observe``) to end the run after that row,
    on purpose (a tuner's pruner: its validation accuracy so far is not worth more rounds). The run records
    ``pruned`` with this message; its rows so far stay."""


class TooFewClientsError(RuntimeError):
    """Fewer than ``min-clients`` clients replied validly in a round: the run cannot go on."""


def require_clients(what: str, valid: int, sent: int, failed: list[ClientFailure], min_clients: int) -> None:
    """Log each failed client; fail clearly when fewer than ``min_clients`` replied validly."""
    for failure in failed:
        log(WARNING, "%s: client %s failed (%s): %s", what, failure.name(), failure.category.value, failure.reason)
    if valid < min_clients:
        names = ", ".join(f"{f.name()} {f.category.value}" for f in failed)
        raise TooFewClientsError(
            f"{what}: {valid} of {sent} clients replied validly ({len(failed)} failed or timed out: {names}), "
            f"fewer than min-clients={min_clients}"
        )


def exchange(
    grid: Grid,
    messages: Iterable[Message],
    timeout: float,
    min_clients: int,
    what: str,
    *,
    check: ReplyCheck | None = None,
    health: RunHealth | None = None,
) -> list[Message]:
    """Send, wait, and keep the valid replies; fail clearly when too few remain.

    ``check`` refuses malformed replies (default: every reply without error is kept);
    ``health`` records the failures.
    """
    messages = list(messages)
    valid, failed = collect(grid, messages, timeout, check)
    failed = [replace(failure, stage=what) for failure in failed]
    if health is not None:
        health.failures.extend(failed)
    require_clients(what, len(valid), len(messages), failed, min_clients)
    return valid


def seed_server_draws(seed: int) -> None:
    """Seed what the server side of a run draws from: Flower's client sampling (Python's ``random``) and
    its client-level DP noise (NumPy's global generator). Every transport calls it before the rounds."""
    random.seed(seed)
    np.random.seed(seed)


def run_rounds(
    grid: Grid,
    strategy: Strategy,
    num_rounds: int,
    aggregates: bool,
    min_clients: int,
    timeout: float,
    on_row: Callable[[Row], None],
    *,
    train_config: ConfigRecord | None = None,
    initial: ArrayRecord | None = None,
    resume: Checkpoint | None = None,
    on_checkpoint: Callable[[Checkpoint], None] | None = None,
    on_replies: Callable[[int, ArrayRecord, list[Message]], None] | None = None,
    health: RunHealth | None = None,
    pooling: Pooling = Pooling.COUNTS,
) -> ArrayRecord:
    """Run rounds up to ``num_rounds``; call ``on_row`` with each finished round's row, in order.

    Each row names the clients that failed in its round (``failed_clients``: node id,
    partition id when the client ever replied validly, ``category`` lost / error /
    malformed, reason, Flower's error code); the last row of an aggregating run also
    has ``final_eval_failed_clients``. A failed client leaves the round, which goes on
    with the valid replies while at least ``min_clients`` remain
    (:class:`TooFewClientsError` otherwise). A round whose global weights or training loss
    are NaN or infinite writes its row and raises :class:`stamen.server.divergence.DivergedError`.
    ``health``, when given, collects every failure of this call (see :class:`RunHealth` for
    when a run counts as degraded).
    After every round ``on_checkpoint`` gets the server's state; ``resume`` continues
    from such a state with the next round (a checkpoint of the last round: only the final
    evaluation and the last row are left, as when a run stopped right after its checkpoint).

    ``train_config`` is sent with every training message (e.g. the unlearning fallback's
    retraining flag); ``initial`` weights are sent in round 1 (default none: clients build the
    seeded initial model). Rows carry every DP-SGD client's epsilon so far, sampled this
    round or not. ``on_replies(r, sent, replies)`` sees each round's weights sent and the
    valid training replies before aggregation (e.g. to record the clients' updates). Returns
    the final global weights (for a non-aggregating algorithm, the weights the server last
    sent, i.e. none). ``pooling``: how the run's task pools the clients' figures (its spec's).
    """
    health = health if health is not None else RunHealth()
    if isinstance(strategy, ReportsHealth):
        strategy.health = health
    arrays = initial if initial is not None else ArrayRecord()  # none: clients build the seeded initial model
    spent: dict[int, float] = {}
    pending: Row = {"round": 0}
    node_partitions: dict[int, int] = {}
    first = 1
    no_loss = any(key in p.UNLEARN_NO_LOSS for key in (train_config or {}))  # the clients report NaN: no loss
    if resume is not None:
        if resume.round > num_rounds:
            raise ValueError(
                f"the checkpoint is at round {resume.round}, beyond num-server-rounds={num_rounds}; "
                f"resume with num-server-rounds >= {resume.round}"
            )
        arrays, pending, node_partitions = resume.arrays, dict(resume.pending), dict(resume.node_partitions)
        first = resume.round + 1
    identity = head_identity()  # each client checks it before it trains (stamen/client/identity.py)
    for server_round in range(first, num_rounds + 1):
        started = time.perf_counter()
        train = ConfigRecord({**identity, **(train_config or {})})
        messages = list(strategy.configure_train(server_round, arrays, train, grid))
        check = train_check(arrays if server_round > 1 else None, aggregates)  # round > 1: an aggregate was sent
        replies, failed = collect(grid, messages, timeout, check, node_partitions)
        failed = [replace(failure, stage=f"round {server_round}") for failure in failed]
        health.failures.extend(failed)
        for reply in replies:
            node_partitions[reply.metadata.src_node_id] = int(reply.content[p.METRICS][p.PARTITION_ID])
        require_clients(f"round {server_round}", len(replies), len(messages), failed, min_clients)
        exchanged = time.perf_counter()
        if on_replies is not None:
            on_replies(server_round, arrays, replies)
        metrics = [reply.content[p.METRICS] for reply in replies]
        accuracies, per_client = pooled_figures(metrics, pooling), client_figures(metrics)
        spent.update({int(m[p.PARTITION_ID]): float(m[p.EPSILON]) for m in metrics if p.EPSILON in m})
        pending.update({k: v for k, v in accuracies.items() if k.startswith("global_")})
        merge_global(pending, per_client)
        if len(pending) > 1:
            on_row(pending)
        if aggregates:
            aggregated, _ = strategy.aggregate_train(server_round, replies)
            if aggregated is None:
                raise RuntimeError(f"round {server_round}: the strategy could not aggregate the replies")
            arrays = aggregated
        pending = {
            "round": server_round,
            "clients": len(replies),
            "failed_clients": [failure.row() for failure in failed],
            "devices": sorted({str(reply.content[p.CLIENT_INFO][p.DEVICE]) for reply in replies}),
            "client_processes": client_processes(replies),
            **training_figures(metrics),
            **epsilon_figures(spent),
            **{k: v for k, v in accuracies.items() if not k.startswith("global_")},
            "per_client": {pid: local_only(figures) for pid, figures in per_client.items()},
            **strategy_figures(strategy, server_round),
            "exchange_seconds": exchanged - started,
            "aggregate_seconds": time.perf_counter() - exchanged,
            "seconds": time.perf_counter() - started,
        }
        try:
            check_round(server_round, None if no_loss else pending.get(TRAIN_LOSS), arrays if aggregates else None)
        except DivergedError:
            on_row(pending)  # the round that diverged stays in the rows (its non-finite figures as null)
            raise
        if on_checkpoint is not None:
            on_checkpoint(Checkpoint(server_round, arrays, dict(pending), node_partitions=dict(node_partitions)))
    if aggregates:
        started = time.perf_counter()
        messages = list(strategy.configure_evaluate(num_rounds, arrays, ConfigRecord(), grid))
        replies, failed = collect(grid, messages, timeout, evaluate_check, node_partitions)
        failed = [replace(failure, stage="final evaluation") for failure in failed]
        health.failures.extend(failed)
        require_clients("final evaluation", len(replies), len(messages), failed, min_clients)
        metrics = [reply.content[p.METRICS] for reply in replies]
        pending.update(pooled_figures(metrics, pooling))
        merge_global(pending, client_figures(metrics))
        pending["final_eval_failed_clients"] = [failure.row() for failure in failed]
        pending["final_eval_seconds"] = time.perf_counter() - started
    on_row(pending)
    return arrays
