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
from server.privacy import epsilon_figures

Row = dict[str, Any]


def pooled_accuracies(metrics: list[MetricRecord]) -> Row:
    """Client-size-weighted accuracies of the global (received) and local (trained) models."""
    row: Row = {}
    total_val = sum(int(m[p.NUM_VAL]) for m in metrics)
    total_test = sum(int(m[p.NUM_TEST]) for m in metrics)
    for name, key, total in (
        ("global_val_acc", p.GLOBAL_VAL_CORRECT, total_val),
        ("global_test_acc", p.GLOBAL_TEST_CORRECT, total_test),
        ("val_acc", p.LOCAL_VAL_CORRECT, total_val),
        ("test_acc", p.LOCAL_TEST_CORRECT, total_test),
    ):
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


def exchange(grid: Grid, messages: Iterable[Message], timeout: float, min_clients: int, what: str) -> list[Message]:
    """Send, wait, and keep the replies without error; fail clearly when too few remain."""
    messages = list(messages)
    replies = list(grid.send_and_receive(messages, timeout=timeout))
    valid = [reply for reply in replies if not reply.has_error()]
    failed = len(messages) - len(valid)
    for reply in replies:
        if reply.has_error():
            log(WARNING, "%s: node %s failed: %s", what, reply.metadata.src_node_id, reply.error.reason)
    if len(valid) < min_clients:
        raise RuntimeError(
            f"{what}: {len(valid)} of {len(messages)} clients replied ({failed} failed or timed out), "
            f"fewer than min-clients={min_clients}"
        )
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
) -> ArrayRecord:
    """Run ``num_rounds`` rounds; call ``on_row`` with each finished round's row, in order.

    ``train_config`` is sent with every training message (e.g. the unlearning fallback's
    retraining flag); ``initial`` weights are sent in round 1 (default none: clients build the
    seeded initial model). Rows carry every DP-SGD client's epsilon so far, sampled this
    round or not. Returns the final global weights (for a non-aggregating algorithm, the
    weights the server last sent, i.e. none).
    """
    arrays = initial if initial is not None else ArrayRecord()  # none: clients build the seeded initial model
    spent: dict[int, float] = {}
    pending: Row = {"round": 0}
    for server_round in range(1, num_rounds + 1):
        started = time.perf_counter()
        messages = strategy.configure_train(server_round, arrays, ConfigRecord(dict(train_config or {})), grid)
        replies = exchange(grid, messages, timeout, min_clients, f"round {server_round}")
        exchanged = time.perf_counter()
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
            "devices": sorted({str(reply.content[p.CLIENT_INFO][p.DEVICE]) for reply in replies}),
            **training_figures(metrics),
            **epsilon_figures(spent),
            **{k: v for k, v in accuracies.items() if not k.startswith("global_")},
            "exchange_seconds": exchanged - started,
            "aggregate_seconds": time.perf_counter() - exchanged,
            "seconds": time.perf_counter() - started,
        }
    if aggregates:
        started = time.perf_counter()
        messages = strategy.configure_evaluate(num_rounds, arrays, ConfigRecord(), grid)
        replies = exchange(grid, messages, timeout, min_clients, "final evaluation")
        pending.update(pooled_accuracies([reply.content[p.METRICS] for reply in replies]))
        pending["final_eval_seconds"] = time.perf_counter() - started
    on_row(pending)
    return arrays
