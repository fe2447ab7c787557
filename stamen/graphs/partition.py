"""Partitioners: cut one graph into K client subgraphs.

Every partitioner returns ``K`` disjoint arrays of node ids that together cover every
node exactly once. In subgraph federated learning a client keeps only the edges
inside its own part (:func:`client_subgraph`); the edges between parts are *cut*.

- ``louvain``: Louvain communities (networkx), communities larger than ``ceil(n/K)``
  split into connected-first chunks, then packed into exactly K clients, largest
  first onto the currently smallest client. Clients stay within about one community
  chunk of ``n/K`` nodes.
- ``metis``: METIS k-way min-cut (pymetis), balanced by METIS itself.
- ``label-dirichlet``: for every class, the class's nodes are shared among clients by
  proportions drawn from ``Dirichlet(alpha)``: small ``alpha`` gives skewed label
  distributions, large ``alpha`` near-uniform ones. It ignores structure, so it cuts
  many edges.
- ``random``: a seeded random permutation dealt into K parts of sizes differing by at most one
  (structure and labels ignored: the i.i.d. baseline).

The same partitioners share out a graph set's graphs (``label-dirichlet``, ``random``), by
their labels (:mod:`stamen.graphs.graph_federation`).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import subgraph

from stamen.graphs.names import PARTITIONERS


def partition_nodes(
    data: Data,
    num_parts: int,
    method: str = "louvain",
    seed: int = 0,
    alpha: float = 0.5,
    unit: str = "nodes",
) -> list[np.ndarray]:
    """Split the nodes of ``data`` into ``num_parts`` disjoint, covering, sorted id arrays.

    Args:
        data: the whole graph.
        num_parts: number of parts K (>= 1, at most the number of nodes).
        method: one of :data:`PARTITIONERS`.
        seed: random seed; the same seed gives the same parts.
        alpha: Dirichlet concentration of ``label-dirichlet``.
        unit: what ``data``'s items are, for messages (``graphs`` when a graph set's graphs are shared out).
    """
    if method not in PARTITIONERS:
        raise ValueError(f"unknown partitioner {method!r}; choose one of: {', '.join(PARTITIONERS)}")
    num_nodes = int(data.num_nodes)
    if not 1 <= num_parts <= num_nodes:
        raise ValueError(
            f"cannot cut {num_nodes} {unit} into {num_parts} clients: use between 1 and {num_nodes} clients"
        )
    if method == "louvain":
        parts = _louvain(data, num_parts, seed)
    elif method == "metis":
        parts = _metis(data, num_parts, seed)
    elif method == "random":
        parts = np.array_split(np.random.default_rng(seed).permutation(num_nodes), num_parts)
    else:
        if alpha <= 0:
            raise ValueError(f"label-dirichlet needs alpha > 0, got {alpha}")
        parts = _label_dirichlet(data, num_parts, seed, alpha)
    empty = [i for i, part in enumerate(parts) if part.size == 0]
    if empty:
        raise ValueError(
            f"{method} left client(s) {empty} without {unit} for {num_parts} clients on "
            f"{num_nodes} {unit}; use fewer clients or another partitioner"
        )
    return [np.sort(part) for part in parts]


def client_subgraph(data: Data, nodes: np.ndarray) -> Data:
    """The subgraph induced by ``nodes``: their rows, and only the edges among them.

    The result keeps ``global_id`` (the node ids in ``data``) so that evaluation can
    map client nodes back to the whole graph.
    """
    index = torch.as_tensor(nodes, dtype=torch.long)
    edge_index, _ = subgraph(index, data.edge_index, relabel_nodes=True, num_nodes=data.num_nodes)
    return Data(
        x=data.x[index],
        y=data.y[index],
        edge_index=edge_index,
        global_id=index,
        num_classes=data.num_classes,
    )


def client_subgraphs(data: Data, parts: list[np.ndarray]) -> list[Data]:
    """:func:`client_subgraph` of every part of a partition, in one pass over the edges.

    Each node gets its owner (its part) and its local id (its position in that part);
    an edge is kept when both ends have the same owner, and a stable sort by owner
    groups the kept edges by client in their global order. So every client's
    ``edge_index`` equals :func:`client_subgraph`'s bit for bit, at the cost of one
    sort instead of one pass over all edges per client (K passes: minutes at 1,000
    clients on a million nodes). ``parts`` must be disjoint (as a partition's are).
    """
    num_nodes = int(data.num_nodes)
    owner = torch.full((num_nodes,), -1, dtype=torch.long)
    local = torch.zeros(num_nodes, dtype=torch.long)
    index = [torch.as_tensor(nodes, dtype=torch.long) for nodes in parts]
    if index and int(torch.bincount(torch.cat(index), minlength=num_nodes).max()) > 1:
        raise ValueError("a node lies in two parts (or twice in one); a partition's parts are disjoint")
    for i, nodes in enumerate(index):
        owner[nodes] = i
        local[nodes] = torch.arange(nodes.numel())
    src, dst = data.edge_index
    source_owner = owner[src]
    inside = source_owner == owner[dst]
    inside &= source_owner >= 0
    del source_owner
    kept = torch.nonzero(inside).flatten()  # the kept edges' positions, in global order
    del inside
    kept_owner = owner[src[kept]]
    kept = kept[torch.sort(kept_owner, stable=True).indices]  # grouped by client, each in global order
    counts = torch.bincount(kept_owner, minlength=len(parts)).tolist()
    del kept_owner
    edges = torch.stack([local[src[kept]], local[dst[kept]]])
    del kept
    return [
        Data(
            x=data.x[nodes],
            y=data.y[nodes],
            edge_index=edge_index.contiguous(),
            global_id=nodes,
            num_classes=data.num_classes,
        )
        for nodes, edge_index in zip(index, torch.split(edges, counts, dim=1))
    ]


def cut_edges(data: Data, parts: list[np.ndarray]) -> int:
    """Number of undirected edges whose ends lie in different parts."""
    owner = np.empty(int(data.num_nodes), dtype=np.int64)
    for i, part in enumerate(parts):
        owner[part] = i
    src, dst = data.edge_index.numpy()
    return int(np.count_nonzero(owner[src] != owner[dst]) // 2)


def _adjacency_lists(data: Data) -> list[np.ndarray]:
    src, dst = data.edge_index.numpy()
    order = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[order], np.arange(int(data.num_nodes) + 1))
    neighbours = dst[order]
    return [neighbours[bounds[i] : bounds[i + 1]] for i in range(int(data.num_nodes))]


def _louvain(data: Data, num_parts: int, seed: int) -> list[np.ndarray]:
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


_GATHER = 1 << 22  # edges gathered at a time into METIS's adjacency lists


def _metis(data: Data, num_parts: int, seed: int) -> list[np.ndarray]:
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


def _label_dirichlet(data: Data, num_parts: int, seed: int, alpha: float) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = data.y.numpy()
    parts: list[list[np.ndarray]] = [[] for _ in range(num_parts)]
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        shares = rng.dirichlet(np.full(num_parts, alpha))
        cuts = (np.cumsum(shares)[:-1] * members.size).astype(np.int64)
        for i, piece in enumerate(np.split(members, cuts)):
            parts[i].append(piece)
    return [np.concatenate(p) for p in parts]
