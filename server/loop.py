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
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from logging import WARNING
from typing import Any

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from models import protocol as p
from server.checkpoint import Checkpoint
from server.privacy import epsilon_figures

Row = dict[str, Any]


def pooled_accuracies(metrics: list[MetricRecord]) -> Row:
    """Client-size-weighted accuracies of the global (received) and local (trained) models.

    Besides validation and test (the seen graph), every evaluation setting the clients
    report (:data:`models.protocol.SETTINGS`) is pooled the same way.
    """
    row: Row = {}
    total_val = sum(int(m[p.NUM_VAL]) for m in metrics)
    total_test = sum(int(m[p.NUM_TEST]) for m in metrics)
    figures = [
        ("global_val_acc", p.GLOBAL_VAL_CORRECT, total_val),
        ("global_test_acc", p.GLOBAL_TEST_CORRECT, total_test),
        ("val_acc", p.LOCAL_VAL_CORRECT, total_val),
        ("test_acc", p.LOCAL_TEST_CORRECT, total_test),
    ]
    for setting in p.SETTINGS:  # e.g. "global_missing_class_acc" and "missing_class_acc"
        total = sum(int(m.get(p.setting_key("num", setting), 0)) for m in metrics)
        name = setting.replace("-", "_") + "_acc"
        figures.append(("global_" + name, p.setting_key("global", setting), total))
        figures.append((name, p.setting_key("local", setting), total))
    for name, key, total in figures:
        if metrics and all(key in m for m in metrics) and total > 0:
            row[name] = sum(int(m[key]) for m in metrics) / total
    return row


def training_figures(metrics: list[MetricRecord]) -> Row:
    """Training loss (weighted by training nodes) and where the clients' time went.

    ``client_<phase>_seconds_sum`` adds a phase over clients (the compute the round
    needs); ``client_handler_seconds_max`` is the slowest client's whole handler, the
    least time any schedule of the round could take.
    """
    examples = sum(int(m[p.NUM_EXAMPLES]) for m in metrics)
    phases = {"setup": p.SETUP_SECONDS, "train": p.TRAIN_SECONDS, "eval": p.EVAL_SECONDS, "pack": p.PACK_SECONDS}
    handler = [sum(float(m[key]) for key in phases.values()) for m in metrics]
    return {
        "train_loss": sum(float(m[p.TRAIN_LOSS]) * int(m[p.NUM_EXAMPLES]) for m in metrics) / max(examples, 1),
        "client_train_seconds_max": max(float(m[p.TRAIN_SECONDS]) for m in metrics),
        **{f"client_{name}_seconds_sum": sum(float(m[key]) for m in metrics) for name, key in phases.items()},
        "client_handler_seconds_sum": sum(handler),
        "client_handler_seconds_max": max(handler),
    }


def collect(grid: Grid, messages: Iterable[Message], timeout: float) -> tuple[list[Message], list[Row]]:
    """Send, wait up to ``timeout`` seconds; return the replies without error and the failures.

    A failure is a reply carrying an error (the ClientApp raised, the SuperLink found the
    node gone) or no reply at all by the timeout (the node died or is unreachable);
    each is ``{"node_id": ..., "reason": ...}``.
    """
    messages = list(messages)
    replies = list(grid.send_and_receive(messages, timeout=timeout))
    # Message ids are set when the grid pushes the messages. An error reply made by the
    # SuperLink itself (node unavailable) comes from the SuperLink's own node id, so a
    # reply is matched to its client through the message it answers.
    sent = {message.metadata.message_id: message.metadata.dst_node_id for message in messages}

    def client_of(reply: Message) -> int:
        return sent.get(reply.metadata.reply_to_message_id, reply.metadata.src_node_id)

    valid = [reply for reply in replies if not reply.has_error()]
    failed = [{"node_id": client_of(r), "reason": r.error.reason} for r in replies if r.has_error()]
    answered = {client_of(reply) for reply in replies}
    failed += [
        {"node_id": m.metadata.dst_node_id, "reason": f"no reply within round-timeout={timeout:g} s"}
        for m in messages
        if m.metadata.dst_node_id not in answered
    ]
    return valid, failed


class TooFewClientsError(RuntimeError):
    """Fewer than ``min-clients`` clients replied in a round: the run cannot go on."""


def require_clients(what: str, valid: int, sent: int, failed: list[Row], min_clients: int) -> None:
    """Log each failed client; fail clearly when fewer than ``min_clients`` replied."""
    for failure in failed:
        log(WARNING, "%s: client %s failed: %s", what, _client_name(failure), failure["reason"])
    if valid < min_clients:
        names = ", ".join(_client_name(f) for f in failed)
        raise TooFewClientsError(
            f"{what}: {valid} of {sent} clients replied ({len(failed)} failed or timed out: {names}), "
            f"fewer than min-clients={min_clients}"
        )


def _client_name(failure: Row) -> str:
    partition = failure.get("partition_id")
    return f"node {failure['node_id']}" + (f" (partition {partition})" if partition is not None else "")


def exchange(grid: Grid, messages: Iterable[Message], timeout: float, min_clients: int, what: str) -> list[Message]:
    """Send, wait, and keep the replies without error; fail clearly when too few remain."""
    messages = list(messages)
    valid, failed = collect(grid, messages, timeout)
    require_clients(what, len(valid), len(messages), failed, min_clients)
    return valid


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
) -> ArrayRecord:
    """Run rounds up to ``num_rounds``; call ``on_row`` with each finished round's row, in order.

    Each row names the clients that failed in its round (``failed_clients``: node id,
    partition id when the client ever replied, reason). After every round
    ``on_checkpoint`` gets the server's state; ``resume`` continues from such a state
    with the next round.

    ``train_config`` is sent with every training message (e.g. the unlearning fallback's
    retraining flag); ``initial`` weights are sent in round 1 (default none: clients build the
    seeded initial model). Rows carry every DP-SGD client's epsilon so far, sampled this
    round or not. ``on_replies(r, sent, replies)`` sees each round's weights sent and the
    training replies before aggregation (e.g. to record the clients' updates). Returns the
    final global weights (for a non-aggregating algorithm, the weights the server last sent,
    i.e. none).
    """
    arrays = initial if initial is not None else ArrayRecord()  # none: clients build the seeded initial model
    spent: dict[int, float] = {}
    pending: Row = {"round": 0}
    node_partitions: dict[int, int] = {}
    first = 1
    if resume is not None:
        if resume.round >= num_rounds:
            raise ValueError(
                f"the checkpoint is at round {resume.round}, num-server-rounds={num_rounds}: nothing left to run; "
                "raise num-server-rounds to train further"
            )
        arrays, pending, node_partitions = resume.arrays, dict(resume.pending), dict(resume.node_partitions)
        first = resume.round + 1
    for server_round in range(first, num_rounds + 1):
        started = time.perf_counter()
        train = ConfigRecord(dict(train_config or {}))
        messages = list(strategy.configure_train(server_round, arrays, train, grid))
        replies, failed = collect(grid, messages, timeout)
        for reply in replies:
            node_partitions[reply.metadata.src_node_id] = int(reply.content[p.METRICS][p.PARTITION_ID])
        failed = [{**f, "partition_id": node_partitions.get(f["node_id"])} for f in failed]
        require_clients(f"round {server_round}", len(replies), len(messages), failed, min_clients)
        exchanged = time.perf_counter()
        if on_replies is not None:
            on_replies(server_round, arrays, replies)
        metrics = [reply.content[p.METRICS] for reply in replies]
        accuracies = pooled_accuracies(metrics)
        spent.update({int(m[p.PARTITION_ID]): float(m[p.EPSILON]) for m in metrics if p.EPSILON in m})
        pending.update({k: v for k, v in accuracies.items() if k.startswith("global_")})
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
            "failed_clients": failed,
            "devices": sorted({str(reply.content[p.CLIENT_INFO][p.DEVICE]) for reply in replies}),
            **training_figures(metrics),
            **epsilon_figures(spent),
            **{k: v for k, v in accuracies.items() if not k.startswith("global_")},
            "exchange_seconds": exchanged - started,
            "aggregate_seconds": time.perf_counter() - exchanged,
            "seconds": time.perf_counter() - started,
        }
        if on_checkpoint is not None:
            on_checkpoint(Checkpoint(server_round, arrays, dict(pending), node_partitions=dict(node_partitions)))
    if aggregates:
        started = time.perf_counter()
        messages = strategy.configure_evaluate(num_rounds, arrays, ConfigRecord(), grid)
        replies = exchange(grid, messages, timeout, min_clients, "final evaluation")
        pending.update(pooled_accuracies([reply.content[p.METRICS] for reply in replies]))
        pending["final_eval_seconds"] = time.perf_counter() - started
    on_row(pending)
    return arrays
