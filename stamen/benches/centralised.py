"""The centralised reference of ``stamen bench algorithms --centralised``: one client holding all the data.

Per dataset, partitioner and seed, the bench adds one run labelled :data:`LABEL`: the federated engine's
own FedAvg run (the same round loop, ClientApp, model and run config: rounds, local epochs, learning
rate, split fractions) over a single client, who holds the whole graph or graph set. One client's
FedAvg is its own training continued round after round (the average of one model is that model), so
the run is centralised training by the same code as every other row, not a second trainer.

The one difference a reader must know: each client draws its train/validation/test split over what it
holds (:func:`stamen.graphs.splits.split_masks`), so the single client's split is drawn over the whole
graph or graph set, not per client: its test nodes or graphs are not the federated rows' (the same
fractions, another draw).
"""

from __future__ import annotations

from typing import Any

from stamen.graphs.names import is_graph_set

LABEL = "centralised"  # the row's name in the table, record and picture
ALGORITHM = "fedavg"  # the federated engine's algorithm that the run uses
CLIENTS = 1


def run_values(federated: dict[str, Any]) -> dict[str, Any]:
    """The centralised run's config: ``federated`` (FedAvg's run config of the setting) over one client."""
    return {**federated, "algorithm": ALGORITHM, "min-clients": CLIENTS}


def note(datasets: list[str]) -> str:
    """The table's sentence on the centralised row (its datasets: graphs or graph sets)."""
    whole = "graph set" if datasets and all(is_graph_set(name) for name in datasets) else "graph"
    return (
        f" {LABEL}: a reference, not a federated method: the same model and settings (rounds, local epochs, learning "
        f"rate, split fractions) trained by the same engine as FedAvg over one client holding the whole {whole}; "
        f"its train/validation/test split is drawn over the whole {whole}, not per client, so its test "
        f"{'graphs' if whole == 'graph set' else 'nodes'} are another draw than the federated rows'."
    )
