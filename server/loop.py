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
    """Training loss (weighted by training nodes) and the clients' compute times."""
    examples = sum(int(m[p.NUM_EXAMPLES]) for m in metrics)
    return {
        "train_loss": sum(float(m[p.TRAIN_LOSS]) * int(m[p.NUM_EXAMPLES]) for m in metrics) / max(examples, 1),
        "client_train_seconds_max": max(float(m[p.TRAIN_SECONDS]) for m in metrics),
        "client_train_seconds_sum": sum(float(m[p.TRAIN_SECONDS]) for m in metrics),
        "client_eval_seconds_sum": sum(float(m[p.EVAL_SECONDS]) for m in metrics),
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
) -> ArrayRecord:
    """Run ``num_rounds`` rounds; call ``on_row`` with each finished round's row, in order.

    Returns the final global weights (for a non-aggregating algorithm, the weights
    the server last sent, i.e. none).
    """
    arrays = ArrayRecord()  # round 1 sends no weights: clients build the seeded initial model
    pending: Row = {"round": 0}
    for server_round in range(1, num_rounds + 1):
        started = time.perf_counter()
        messages = strategy.configure_train(server_round, arrays, ConfigRecord(), grid)
        replies = exchange(grid, messages, timeout, min_clients, f"round {server_round}")
        exchanged = time.perf_counter()
        metrics = [reply.content[p.METRICS] for reply in replies]
        accuracies = pooled_accuracies(metrics)
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
