"""``metis``: METIS k-way min-cut (pymetis), balanced by METIS itself; the seed relabels the nodes."""

from __future__ import annotations

from typing import Any

import numpy as np

from stamen.graphs.names import PartitionerSpec


def partition(data: Any, num_parts: int, seed: int, alpha: float) -> list[np.ndarray]:
    """K arrays of node ids (see :class:`stamen.graphs.names.PartitionerSpec`)."""
    return _metis(data, num_parts, seed)


_GATHER = 1 << 22  # edges gathered at a time into METIS's adjacency lists


def _metis(data: Any, num_parts: int, seed: int) -> list[np.ndarray]:
    # on use: pymetis stays out of this module's import
    import pymetis

    if num_parts == 1:
        return [np.arange(int(data.num_nodes))]
    # METIS's own seed barely moves its answer; relabelling the nodes by the seed does.
    order = np.random.default_rng(seed).permutation(int(data.num_nodes))
    relabel = np.empty_like(order)
    relabel[order] = np.arange(order.size)
    # The relabelled graph in CSR form: node j (old node order[j]) lists relabel[its neighbours]
    # in edge order. A stable sort of the edges by their relabelled source gives exactly the
    # lists a per-node loop builds, without a million small arrays.
    # Each temporary is freed before the next is made, and the lists are gathered a chunk at a time.
    src, dst = data.edge_index.numpy()
    new_src = relabel[src]
    starts = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(new_src, minlength=order.size), out=starts[1:])
    by_source = np.argsort(new_src, kind="stable")
    del new_src
    adjacent = np.empty(dst.size, dtype=np.int64)  # METIS's idx_t here: pymetis takes it without a copy
    for begin in range(0, dst.size, _GATHER):
        adjacent[begin : begin + _GATHER] = relabel[dst[by_source[begin : begin + _GATHER]]]
    del by_source
    adjacency = pymetis.CSRAdjacency(adj_starts=starts, adjacent=adjacent)
    _, membership = pymetis.part_graph(num_parts, adjacency=adjacency, options=pymetis.Options(seed=seed))
    membership = np.asarray(membership)[relabel]
    return [np.flatnonzero(membership == i) for i in range(num_parts)]


SPEC = PartitionerSpec(
    "metis", "METIS k-way min-cut, balanced (pymetis); scales to large graphs", function=f"{__name__}:partition"
)
