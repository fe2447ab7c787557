"""What ``stamen bench algorithms`` keeps of a run and tabulates, per task: the task's own figures.

Every figure is the run's own: a pooled figure is its summary's (:func:`stamen.server.outputs.summarize`,
read, never recomputed), at the round of best validation figure :math:`r^*` and at the final round.

- ``node-classification`` and ``graph-classification``: the test accuracy (%) of the global model
  (the weights every client received; absent when the algorithm keeps none) and of the clients'
  models (each client's model after its local training), pooled over the clients' test nodes or
  test graphs, at :math:`r^*` (best validation accuracy) and at the final round.
- ``link-prediction``: the test AUC, average precision and Hits@K at :math:`r^*` (best validation
  AUC), each *pooled* (the clients' figures weighted by their positive test edges: the row's
  figure) and as the *clients' mean* (the unweighted mean of each client's own figure in that
  round's ``per_client``: a pooled figure can hide small clients that fare worse); the AUC on the
  edges the partition cut (which no client holds, pooled over the clients that score them), and
  the test AUC at the final round. The model is the run's headline one (:func:`stamen.contract.figures.headline`):
  the global model where the algorithm keeps one, else the clients' models, and the row says so.

A cell is the mean ± population standard deviation over the seeds that ran.
"""

from __future__ import annotations

from statistics import mean, pstdev
from typing import Any

from stamen.contract.algorithms import Headline, headline_of
from stamen.contract.figures import GLOBAL_TEST_ACC, TEST_ACC, clients_mean, link_figure

# The built-in tasks whose published tables the benches lay theirs beside (stamen/tasks/<task>/).
NODE_CLASSIFICATION = "node-classification"
LINK_PREDICTION = "link-prediction"
GRAPH_CLASSIFICATION = "graph-classification"

HEADLINE_MARK = " *"  # on the cells of the algorithm's headline model (AlgorithmSpec.headline)
HEADLINE_NOTE = (
    "* marks each algorithm's headline model, as its spec names it (the global model for FedAvg-like methods, "
    "the clients' own models for personalised ones)."
)

# What the client-model figure of a FedAvg-like method is: a client evaluates the global model it receives, trains
# it for the round, evaluates the trained model on its own validation and test graphs (stamen/client/handlers.py)
# and sends it to be aggregated; the aggregate is the round's global model (stamen/server/loop.py).
FEDAVG_CLIENTS_NOTE = (
    "For FedAvg-like methods (those whose headline is the global model) the client-model columns are each "
    "client's model after one round of local training (local-epochs epochs) from the global weights it received, "
    "evaluated on its own test graphs and pooled over the clients; the round's global model is their aggregate, "
    "so the two columns differ by the aggregation, and the client figure is not that of a personalisation method."
)

# Accuracy tasks: the summary figures a run keeps, (summary key, column label).
ACCURACIES = ((GLOBAL_TEST_ACC, "global model"), (TEST_ACC, "client models"))

# Link prediction: the test metrics tabulated, pooled and clients' mean, (metric, column label).
LINK_METRICS = (("auc", "test AUC"), ("ap", "test AP"), ("hits", "test Hits@K"))

# The run-config keys each run records, per task, for the footnote's settings.
SETTING_KEYS: dict[str, tuple[str, ...]] = {
    NODE_CLASSIFICATION: ("model", "hidden", "local-epochs", "lr", "weight-decay", "dropout", "train-frac", "val-frac"),
    LINK_PREDICTION: (
        "model", "hidden", "local-epochs", "lr", "weight-decay", "dropout", "link-decoder", "link-val-frac",
        "link-test-frac", "hits-k",
    ),
    GRAPH_CLASSIFICATION: (
        "model", "hidden", "local-epochs", "lr", "weight-decay", "dropout", "graph-batch-size", "train-frac",
        "val-frac",
    ),
}  # fmt: skip


def _link_keys(global_model: bool) -> list[str]:
    """The pooled link figures a run keeps for one model: the test metrics and the cut-edge AUC."""
    return [link_figure("test", metric, global_model) for metric, _ in LINK_METRICS] + [
        link_figure("cut", "auc", global_model)
    ]


def kept(task: str, summary: dict[str, Any], rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The figures a run keeps at its best round and at its final round (see the module docstring)."""
    if task != LINK_PREDICTION:
        return (
            {key: summary["best"].get(key) for key, _ in ACCURACIES},
            {key: summary["final"].get(key) for key, _ in ACCURACIES},
        )
    best_row = next((row for row in rows if row.get("round") == summary["best_round"]), {})
    parts = []
    for part, row in (("best", best_row), ("final", rows[-1] if rows else {})):
        figures: dict[str, Any] = {}
        for key in _link_keys(True) + _link_keys(False):
            figures[key] = summary[part].get(key)
            figures[clients_mean(key)] = _clients_mean(row, key)
        parts.append(figures)
    return parts[0], parts[1]


def _clients_mean(row: dict[str, Any], key: str) -> float | None:
    values = [c[key] for c in row.get("per_client", {}).values() if isinstance(c.get(key), int | float)]
    return mean(values) if values else None


def figure_columns(task: str, hits_k: Any = "K") -> list[str]:
    """The figure columns of ``task``'s table, in order."""
    if task != LINK_PREDICTION:
        return [f"{label} {when}" for _, label in ACCURACIES for when in ("at best val", "final")]
    columns = []
    for _, label in LINK_METRICS:
        label = label.replace("@K", f"@{hits_k}")
        columns += [label, f"{label}, clients' mean"]
    return [*columns, "cut-edge AUC", "test AUC final"]


def cells(task: str, ran: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The figure cells of one algorithm over its runs, and a note for its name (the model shown)."""
    if task != LINK_PREDICTION:  # the algorithm's headline model's cells marked (its spec's)
        headline = GLOBAL_TEST_ACC if headline_of(ran[0].get("algorithm")) is Headline.GLOBAL else TEST_ACC
        row: list[str] = []
        for key, _ in ACCURACIES:
            for when in ("best", "final"):
                shown = percent([r[when].get(key) for r in ran])
                row.append(shown + (HEADLINE_MARK if key == headline and shown != "-" else ""))
        return "", row
    global_model = any(r["best"].get(link_figure("test", "auc", True)) is not None for r in ran)
    row = []
    for metric, _ in LINK_METRICS:
        key = link_figure("test", metric, global_model)
        row += [fraction([r["best"].get(key) for r in ran]), fraction([r["best"].get(clients_mean(key)) for r in ran])]
    row += [
        fraction([r["best"].get(link_figure("cut", "auc", global_model)) for r in ran]),
        fraction([r["final"].get(link_figure("test", "auc", global_model)) for r in ran]),
    ]
    return ("" if global_model else " (client models)"), row


def percent(values: list[float | None]) -> str:
    """An accuracy's mean ± std over runs, in %, (``k of n runs`` where some lack it), ``-`` where none has it."""
    return _cell(values, 100, 1)


def fraction(values: list[float | None]) -> str:
    """An AUC, AP or Hits@K's mean ± std over runs, as a fraction to 3 decimals."""
    return _cell(values, 1, 3)


def _cell(values: list[float | None], scale: float, digits: int) -> str:
    numbers = [scale * value for value in values if value is not None]
    if not numbers:
        return "-"
    return f"{mean(numbers):.{digits}f} ± {pstdev(numbers):.{digits}f}" + (
        "" if len(numbers) == len(values) else f" ({len(numbers)} of {len(values)} runs)"
    )


def caption(task: str, seeds: list[int], setting: dict[str, Any]) -> str:
    """The table's first line for a task other than node classification (whose caption is the bench's own)."""
    clients, rounds = setting.get("clients"), setting.get("rounds")
    runs = f"mean ± std over seeds {seeds}, {clients} clients, {rounds} rounds, in process"
    if task == GRAPH_CLASSIFICATION:
        return (
            f"Graph classification: test accuracy (%) over the clients' test graphs, {runs}; each figure is the run's "
            "own summary: at the round of best validation accuracy (the global model's where the algorithm keeps "
            "one, else the client models') and at the final round. Global model: the weights every client received "
            "(- where the algorithm keeps none); client models: every client's model after its local training, "
            f"pooled over the clients' test graphs (the personalised figure). {FEDAVG_CLIENTS_NOTE} {HEADLINE_NOTE}"
        )
    return (
        f"Link prediction: {runs}; figures at the round of best validation AUC unless marked final, of the global "
        "model (the client models' where the algorithm keeps none, marked). Pooled (the run's own summary): the "
        "clients' figures weighted by their positive test edges; clients' mean: the unweighted mean of the "
        "clients' own figures in that round's row. Cut-edge AUC: the edges the partition cut, which no client "
        "holds, pooled over the clients that score them."
    )
