"""The figures of a round's row: pooled over clients, and per client.

Rows are pooled over clients from counts: an accuracy is the number of correct
nodes over all clients divided by the number of nodes, i.e. the client average
weighted by client size. Each row also keeps every client's own figures
(``per_client``, by partition id), from which the summary's fairness view is drawn.

How a run's figures pool is its task's (:attr:`stamen.contract.tasks.TaskSpec.pooling`): from counts
(:attr:`~stamen.contract.tasks.Pooling.COUNTS`), or, for ratios no count adds up to (AUC, AP, Hits@K,
:data:`stamen.contract.figures.LINK_FIGURES`), as the clients' own figures weighted by their positive
examples of the set (validation, test, cut), over the clients that report it
(:attr:`~stamen.contract.tasks.Pooling.WEIGHTED`).

A strategy may add figures of its own to each round's row (:class:`RowFigures`, e.g. GCFL's clusters
and splits); a strategy that does not leaves the row as it is.
"""

from __future__ import annotations

import math

from flwr.app import Message, MetricRecord

from stamen.contract import protocol as p
from stamen.contract.figures import (
    GLOBAL_TEST_ACC,
    GLOBAL_VAL_ACC,
    LINK_METRICS,
    TEST_ACC,
    TRAIN_LOSS,
    TRAIN_REGULARISER,
    VAL_ACC,
    Row,
    link_figure,
    setting_acc,
    setting_nodes,
)
from stamen.contract.tasks import Pooling

# per-client figures: (row key, correct-count metric, total metric)
_CLIENT_ACCURACIES = (
    (GLOBAL_VAL_ACC, p.GLOBAL_VAL_CORRECT, p.NUM_VAL),
    (GLOBAL_TEST_ACC, p.GLOBAL_TEST_CORRECT, p.NUM_TEST),
    (VAL_ACC, p.LOCAL_VAL_CORRECT, p.NUM_VAL),
    (TEST_ACC, p.LOCAL_TEST_CORRECT, p.NUM_TEST),
)


def pooled_figures(metrics: list[MetricRecord], pooling: Pooling) -> Row:
    """The round's figures of the global (received) and local (trained) models, pooled over clients as the
    run's task says (``pooling``)."""
    return pooled_accuracies(metrics) if pooling is Pooling.COUNTS else pooled_link_figures(metrics)


def pooled_accuracies(metrics: list[MetricRecord]) -> Row:
    """Client-size-weighted accuracies of the global (received) and local (trained) models.

    Besides validation and test (the seen graph), every evaluation setting the clients
    report (:data:`stamen.contract.protocol.SETTINGS`) is pooled the same way.
    """
    row: Row = {}
    total_val = sum(int(m[p.NUM_VAL]) for m in metrics)
    total_test = sum(int(m[p.NUM_TEST]) for m in metrics)
    figures = [
        (GLOBAL_VAL_ACC, p.GLOBAL_VAL_CORRECT, total_val),
        (GLOBAL_TEST_ACC, p.GLOBAL_TEST_CORRECT, total_test),
        (VAL_ACC, p.LOCAL_VAL_CORRECT, total_val),
        (TEST_ACC, p.LOCAL_TEST_CORRECT, total_test),
    ]
    for setting in p.SETTINGS:  # e.g. "global_missing_class_acc" and "missing_class_acc"
        total = sum(int(m.get(p.setting_key("num", setting), 0)) for m in metrics)
        figures.append((setting_acc(setting, True), p.setting_key("global", setting), total))
        figures.append((setting_acc(setting, False), p.setting_key("local", setting), total))
    for name, key, total in figures:
        if metrics and all(key in m for m in metrics) and total > 0:
            row[name] = sum(int(m[key]) for m in metrics) / total
    return row


def _link_entries() -> list[tuple[str, str, str]]:
    """(row key, METRICS key, positive-edge count key) of every link figure."""
    return [
        (link_figure(edges, metric, model == "global"), p.link_key(model, edges, metric), count)
        for model in ("global", "local")
        for edges, count in p.LINK_KEY_SETS.items()
        for metric in LINK_METRICS
    ]


def pooled_link_figures(metrics: list[MetricRecord]) -> Row:
    """Figures pooled over the clients that report them (a NaN is no figure), each client's weighted by its positive
    examples of the set (:attr:`stamen.contract.tasks.Pooling.WEIGHTED`: a link-predicting task's)."""
    row: Row = {}
    for name, key, count in _link_entries():
        weighted = [
            (float(m[key]), int(m[count]))
            for m in metrics
            if key in m and math.isfinite(float(m[key])) and int(m.get(count, 0)) > 0
        ]
        total = sum(n for _, n in weighted)
        if total > 0:
            row[name] = sum(value * n for value, n in weighted) / total
    return row


def training_figures(metrics: list[MetricRecord]) -> Row:
    """Training loss (weighted by training nodes) and where the clients' time went.

    ``client_<phase>_seconds_sum`` adds a phase over clients (the compute the round
    needs); ``client_handler_seconds_max`` is the slowest client's whole handler, the
    least time any schedule of the round could take.
    """
    examples = sum(int(m[p.NUM_EXAMPLES]) for m in metrics)
    regulariser = (
        {
            TRAIN_REGULARISER: sum(float(m[p.TRAIN_REGULARISER]) * int(m[p.NUM_EXAMPLES]) for m in metrics)
            / max(examples, 1)
        }
        if metrics and all(p.TRAIN_REGULARISER in m for m in metrics)
        else {}
    )
    phases = {"setup": p.SETUP_SECONDS, "train": p.TRAIN_SECONDS, "eval": p.EVAL_SECONDS, "pack": p.PACK_SECONDS}
    handler = [sum(float(m[key]) for key in phases.values()) for m in metrics]
    return {
        # a client without training nodes weighs nothing (its loss, of no nodes, may be NaN)
        TRAIN_LOSS: sum(float(m[p.TRAIN_LOSS]) * n for m in metrics if (n := int(m[p.NUM_EXAMPLES])) > 0)
        / max(examples, 1),
        **regulariser,
        "client_train_seconds_max": max(float(m[p.TRAIN_SECONDS]) for m in metrics),
        **{f"client_{name}_seconds_sum": sum(float(m[key]) for m in metrics) for name, key in phases.items()},
        "client_handler_seconds_sum": sum(handler),
        "client_handler_seconds_max": max(handler),
    }


def client_figures(metrics: list[MetricRecord]) -> dict[str, Row]:
    """Each client's own accuracies (global and local models), training loss, training nodes and the node
    counts of the evaluation settings it reports, by partition id."""
    clients: dict[str, Row] = {}
    for m in metrics:
        figures: Row = {"train_nodes": int(m[p.NUM_EXAMPLES])} if p.NUM_EXAMPLES in m else {}
        if p.TRAIN_LOSS in m:
            figures[TRAIN_LOSS] = float(m[p.TRAIN_LOSS])
        if p.TRAIN_REGULARISER in m:
            figures[TRAIN_REGULARISER] = float(m[p.TRAIN_REGULARISER])
        for name, correct, total in _CLIENT_ACCURACIES:
            if correct in m and int(m[total]) > 0:
                figures[name] = int(m[correct]) / int(m[total])
        figures.update({name: float(m[key]) for name, key, _ in _link_entries() if key in m and math.isfinite(m[key])})
        counts = {setting: p.setting_key("num", setting) for setting in p.SETTINGS}
        figures.update({setting_nodes(setting): int(m[key]) for setting, key in counts.items() if key in m})
        clients[str(int(m[p.PARTITION_ID]))] = figures
    return clients


def local_only(figures: Row) -> Row:
    """A client's figures without the global model's (those belong to the previous row)."""
    return {k: v for k, v in figures.items() if not k.startswith("global_")}


def merge_global(row: Row, clients: dict[str, Row]) -> None:
    """Add the global model's per-client accuracies (measured now) to ``row``'s per-client figures."""
    measured = {pid: {k: v for k, v in f.items() if k.startswith("global_")} for pid, f in clients.items()}
    if not any(measured.values()):  # no global model (e.g. local training): nothing to add
        return
    per_client = row.setdefault("per_client", {})
    for pid, figures in measured.items():
        per_client.setdefault(pid, {}).update(figures)


def client_processes(replies: list[Message]) -> dict[str, float]:
    """The processes that answered the round (host, Ray node, PID), each with its peak resident memory in MB
    so far: the clients' side of a run on every node, where the command sees only its own machine."""
    processes: dict[str, float] = {}
    for reply in replies:
        info = reply.content[p.CLIENT_INFO]
        if p.PROCESS in info:  # a client of an earlier version does not say
            name = str(info[p.PROCESS])
            processes[name] = max(processes.get(name, 0.0), float(info.get(p.PEAK_RSS_MB, 0.0)))
    return dict(sorted(processes.items()))


class RowFigures:
    """A strategy with figures of its own in each round's row: :func:`strategy_figures` asks it after the round's
    aggregation (keys declared in :mod:`stamen.contract.figures`)."""

    def row_figures(self, server_round: int) -> Row:
        """The figures of round ``server_round`` for its row."""
        return {}


def strategy_figures(strategy: object, server_round: int) -> Row:
    """What ``strategy`` adds to round ``server_round``'s row: nothing unless it is a :class:`RowFigures`."""
    return strategy.row_figures(server_round) if isinstance(strategy, RowFigures) else {}
