"""A federation as built: the graph, its parts and the clients' data (:class:`Federation`), and the digest by
which every process of a run checks that it cut the same partition (:func:`partition_digest`).

Built by :func:`stamen.graphs.federation.build_federation` (one graph cut into subgraphs),
:func:`stamen.graphs.graph_federation.build_graph_federation` (graph sets shared out whole) and
:func:`stamen.graphs.cross_dataset.build_cross_dataset` (one dataset per client).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np
from torch_geometric.data import Data

from stamen.graphs.spec import FederationSpec


@dataclass
class Federation:
    """The clients' subgraphs (``train_mask``/``val_mask``/``test_mask`` set) and their provenance."""

    spec: FederationSpec
    graph: Data
    parts: list[np.ndarray]
    clients: list[Data]
    new_client: Data | None
    cut_edges: int

    @functools.cached_property
    def digest(self) -> str:
        """:func:`partition_digest` of this federation's parts."""
        return partition_digest(self.parts)


def partition_digest(parts: list[np.ndarray]) -> str:
    """A short hash of which nodes each part holds, in order: two processes that cut the same
    partition of the same graph agree on it, any other cut differs (see :mod:`stamen.contract.identity`)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(np.asarray(part, dtype=np.int64).tobytes())
        digest.update(b"|")
    return digest.hexdigest()[:16]
