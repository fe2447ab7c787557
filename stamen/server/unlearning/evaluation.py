"""The figures of a federated unlearning run, pooled from the clients' counts.

Each client answers an ``unlearn-evaluate`` query with correct and total counts on
:math:`D_r`, :math:`D_f` and its test nodes (:func:`stamen.unlearn.evaluate.client_counts`); the
server pools them (:func:`stamen.unlearn.evaluate.accuracies`). No membership-inference AUC here:
it needs per-node losses, which stay on clients (the in-process experiment computes it).
"""

from __future__ import annotations

from typing import Any

from flwr.app import ArrayRecord
from flwr.serverapp import Grid

from stamen.contract import protocol as p
from stamen.contract.requests import Request
from stamen.server.loop import exchange
from stamen.server.unlearning.rollcall import query


def pooled_figures(counts: dict[int, dict[str, int]], request: Request) -> dict[str, Any]:
    """Accuracies from ``counts`` (partition id -> a client's counts); the requesting client's test
    accuracy comes from its own counts."""
    # on use: torch, torch_geometric, scipy stay out of this module's import
    from stamen.unlearn.evaluate import accuracies

    client = counts.get(request.client) if request.client is not None else None
    return accuracies(list(counts.values()), request, client)


def evaluate_federated(
    grid: Grid, request: Request, arrays: ArrayRecord, node_ids: list[int], timeout: float, min_clients: int
) -> dict[str, Any]:
    """Pooled accuracies of ``arrays`` on the clients of ``node_ids``."""
    replies = exchange(
        grid,
        query(p.UNLEARN_EVALUATE_QUERY, request, arrays, node_ids),
        timeout,
        min(min_clients, len(node_ids)),
        "unlearning (evaluation)",
    )
    counts = {int(r.content[p.METRICS][p.PARTITION_ID]): dict(r.content[p.METRICS]) for r in replies}
    return pooled_figures(counts, request)
