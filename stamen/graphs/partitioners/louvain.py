"""``louvain``: Louvain communities (networkx), cut to size and packed into exactly K clients.

Communities larger than ``ceil(n/K)`` are split into connected-first chunks (breadth-first inside the
community), then packed into exactly K clients, largest first onto the currently smallest client. Clients
stay within about one community chunk of ``n/K`` nodes; few edges are cut.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from stamen.graphs.names import PartitionerSpec


def partition(data: Any, num_parts: int, seed: int, alpha: float) -> list[np.ndarray]:
    """K arrays of node ids (see :class:`stamen.graphs.names.PartitionerSpec`)."""
    return _louvain(data, num_parts, seed)


def _adjacency_lists(data: Any) -> list[np.ndarray]:
    src, dst = data.edge_index.numpy()
    order = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[order], np.arange(int(data.num_nodes) + 1))
    neighbours = dst[order]
    return [neighbours[bounds[i] : bounds[i + 1]] for i in range(int(data.num_nodes))]


def _louvain(data: Any, num_parts: int, seed: int) -> list[np.ndarray]:
    # on use: networkx stays out of this module's import
    import networkx as nx

    graph = nx.Graph()
    graph.add_nodes_from(range(int(data.num_nodes)))
    graph.add_edges_from(data.edge_index.t().tolist())
    communities = nx.community.louvain_communities(graph, seed=seed)
    cap = math.ceil(int(data.num_nodes) / num_parts)
    adjacency = _adjacency_lists(data)
    chunks: list[np.ndarray] = []
    for community in communities:
        members = np.array(sorted(community), dtype=np.int64)
        if members.size <= cap:
            chunks.append(members)
        else:
            ordered = _breadth_first_order(members, adjacency)
            chunks.extend(ordered[i : i + cap] for i in range(0, ordered.size, cap))
    # Enough chunks for every client: split the largest until there are K.
    while len(chunks) < num_parts:
        chunks.sort(key=len)
        largest = chunks.pop()
        half = largest.size // 2
        chunks.extend([largest[:half], largest[half:]])
    rng = np.random.default_rng(seed)
    chunks = [chunks[i] for i in rng.permutation(len(chunks))]  # random tie-breaking
    chunks.sort(key=len, reverse=True)
    parts: list[list[np.ndarray]] = [[] for _ in range(num_parts)]
    sizes = np.zeros(num_parts, dtype=np.int64)
    for chunk in chunks:
        smallest = int(np.argmin(sizes))
        parts[smallest].append(chunk)
        sizes[smallest] += chunk.size
    return [np.concatenate(p) if p else np.empty(0, np.int64) for p in parts]


def _breadth_first_order(members: np.ndarray, adjacency: list[np.ndarray]) -> np.ndarray:
    """``members`` ordered breadth-first inside their induced subgraph, so chunks stay connected."""
    inside = set(members.tolist())
    seen: set[int] = set()
    order: list[int] = []
    for start in members.tolist():
        if start in seen:
            continue
        seen.add(start)
        frontier = [start]
        while frontier:
            order.extend(frontier)
            following = []
            for node in frontier:
                for neighbour in adjacency[node].tolist():
                    if neighbour in inside and neighbour not in seen:
                        seen.add(neighbour)
                        following.append(neighbour)
            frontier = following
    return np.array(order, dtype=np.int64)


SPEC = PartitionerSpec(
    "louvain",
    "Louvain communities packed into K clients of about n/K nodes (few cut edges)",
    function=f"{__name__}:partition",
)
