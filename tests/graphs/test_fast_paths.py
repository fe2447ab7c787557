"""The vectorised graph building (csbm edges, METIS's input, client subgraphs) gives the plain loops' outputs bit
for bit.

Each plain loop is kept here as the oracle: a faster path that changed a graph,
a partition or a client's edges for the same seed would break users' reproducibility.
"""

from __future__ import annotations

import numpy as np
import pymetis
import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops, subgraph, to_undirected

from stamen.graphs import client_subgraph, client_subgraphs, make_csbm, partition_nodes
from stamen.graphs.csbm import make_paper_csbm, sample_csbm
from stamen.graphs.datasets import canonical_edges


def _plain_sample_block(left, right, prob, rng):
    same = left is right or (left.size == right.size and np.array_equal(left, right))
    num_pairs = left.size * (left.size - 1) // 2 if same else left.size * right.size
    count = rng.binomial(num_pairs, prob) if num_pairs > 0 else 0
    if count == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < count:
        need = count - len(chosen)
        u = left[rng.integers(0, left.size, size=2 * need + 8)]
        v = right[rng.integers(0, right.size, size=2 * need + 8)]
        for a, b in zip(u.tolist(), v.tolist()):
            if a == b:
                continue
            pair = (a, b) if a < b else (b, a)
            if pair not in chosen:
                chosen.add(pair)
                if len(chosen) == count:
                    break
    pairs = np.array(sorted(chosen), dtype=np.int64)
    return pairs[:, 0], pairs[:, 1]


def _plain_sample_csbm(labels, means, sigma, p, q, seed):
    labels = np.asarray(labels, dtype=np.int64)
    means = np.asarray(means, dtype=np.float64)
    rng = np.random.default_rng(seed)
    num_classes = means.shape[0]
    features = means[labels] + sigma * rng.standard_normal((labels.size, means.shape[1]))
    members = [np.flatnonzero(labels == c) for c in range(num_classes)]
    sources, targets = [], []
    for a in range(num_classes):
        for b in range(a, num_classes):
            src, dst = _plain_sample_block(members[a], members[b], p if a == b else q, rng)
            sources.append(src)
            targets.append(dst)
    src, dst = np.concatenate(sources), np.concatenate(targets)
    edge_index = torch.unique(
        torch.from_numpy(np.stack([np.concatenate([src, dst]), np.concatenate([dst, src])])), dim=1
    )
    return torch.from_numpy(features).float(), edge_index


@pytest.mark.parametrize(
    "num_nodes,num_classes,p,q,seed",
    [(300, 7, 0.1, 0.01, 1), (40, 3, 0.9, 0.6, 2), (25, 2, 1.0, 1.0, 3), (30, 4, 0.0, 0.0, 4), (300, 5, 0.02, 0.0, 5)],
)
def test_csbm_sampling_equals_the_per_pair_loop(monkeypatch, num_nodes, num_classes, p, q, seed):
    """Dense blocks (p, q near 1) need several oversampling rounds; empty ones none; features come in blocks."""
    monkeypatch.setattr("stamen.graphs.csbm.FEATURE_ROWS", 7)  # several blocks and a ragged last one
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(num_nodes) % num_classes)
    means = rng.standard_normal((num_classes, 6))
    sigma = 0.5 + seed / 7  # not 1: the scaling of the noise is compared too
    new = sample_csbm(labels, means, sigma, p, q, seed=seed)
    x, edge_index = _plain_sample_csbm(labels, means, sigma, p, q, seed=seed)
    assert new.edge_index.dtype == edge_index.dtype == torch.int64 and new.x.dtype == x.dtype == torch.float32
    assert torch.equal(new.edge_index, edge_index) and torch.equal(new.x, x)
    if p > 0:
        assert edge_index.size(1) > 0  # the comparison saw edges


@pytest.mark.parametrize("make,num_nodes", [(make_csbm, 300), (make_csbm, 1000), (make_paper_csbm, 200)])
def test_default_and_paper_csbm_keep_their_graphs(monkeypatch, make, num_nodes):
    new = make(num_nodes=num_nodes, seed=5)

    def plain(labels, means, sigma, p, q, seed):
        x, edge_index = _plain_sample_csbm(labels, means, sigma, p, q, seed)
        return Data(x=x, edge_index=edge_index, y=torch.from_numpy(np.asarray(labels, dtype=np.int64)))

    monkeypatch.setattr("stamen.graphs.csbm.sample_csbm", plain)
    reference = make(num_nodes=num_nodes, seed=5)
    assert reference.edge_index.size(1) > num_nodes
    assert torch.equal(new.edge_index, reference.edge_index) and torch.equal(new.x, reference.x)


def _plain_client_subgraph(data: Data, nodes: np.ndarray) -> Data:
    index = torch.as_tensor(nodes, dtype=torch.long)
    edge_index, _ = subgraph(index, data.edge_index, relabel_nodes=True, num_nodes=data.num_nodes)
    return Data(x=data.x[index], y=data.y[index], edge_index=edge_index, global_id=index, num_classes=data.num_classes)


def _same(a: Data, b: Data) -> bool:
    return (
        a.edge_index.is_contiguous()
        and all(torch.equal(a[key], b[key]) for key in ("x", "y", "edge_index", "global_id"))
        and a.num_classes == b.num_classes
    )


@pytest.mark.parametrize("method", ["metis", "label-dirichlet"])
def test_client_subgraphs_equal_one_subgraph_per_client(method):
    data = make_csbm(num_nodes=300, seed=3)
    parts = partition_nodes(data, 3, method, seed=0)
    parts = parts + [np.array([], dtype=np.int64)]  # an empty part gets an empty graph
    shuffled = [np.random.default_rng(1).permutation(part) for part in parts]  # local ids follow the given order
    for given in (parts, shuffled, parts[:2]):  # parts[:2]: nodes outside every part drop their edges
        fast = client_subgraphs(data, given)
        assert len(fast) == len(given)
        assert all(_same(f, _plain_client_subgraph(data, nodes)) for f, nodes in zip(fast, given))
        assert all(_same(f, client_subgraph(data, nodes)) for f, nodes in zip(fast, given))
    assert sum(sub.edge_index.size(1) for sub in client_subgraphs(data, parts)) > 0


def test_client_subgraphs_refuse_overlapping_parts():
    data = make_csbm(num_nodes=300, seed=3)
    with pytest.raises(ValueError, match="two parts"):
        client_subgraphs(data, [np.arange(0, 200), np.arange(150, 300)])


def _plain_metis(data: Data, num_parts: int, seed: int) -> list[np.ndarray]:
    order = np.random.default_rng(seed).permutation(int(data.num_nodes))
    relabel = np.empty_like(order)
    relabel[order] = np.arange(order.size)
    src, dst = data.edge_index.numpy()
    by_source = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[by_source], np.arange(int(data.num_nodes) + 1))
    neighbours = [dst[by_source][bounds[i] : bounds[i + 1]] for i in range(int(data.num_nodes))]
    adjacency = [relabel[neighbours[node]] for node in order]
    _, membership = pymetis.part_graph(num_parts, adjacency=adjacency, options=pymetis.Options(seed=seed))
    membership = np.asarray(membership)[relabel]
    return [np.flatnonzero(membership == i) for i in range(num_parts)]


@pytest.mark.parametrize("num_parts,seed", [(3, 0), (10, 1)])
def test_metis_input_in_csr_gives_the_same_parts(num_parts, seed):
    data = make_csbm(num_nodes=300, seed=2)
    fast = partition_nodes(data, num_parts, "metis", seed=seed)
    plain = _plain_metis(data, num_parts, seed)
    assert all(np.array_equal(a, b) for a, b in zip(fast, plain))
    assert len({part.size for part in fast}) > 0 and sum(part.size for part in fast) == 300


def _pyg_canonical(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    edge_index, _ = remove_self_loops(edge_index)
    return coalesce(to_undirected(edge_index, num_nodes=num_nodes), num_nodes=num_nodes)


@pytest.mark.parametrize("seed", [0, 1])
def test_canonical_edges_equal_pyg_on_a_directed_multigraph(seed):
    """Self-loops, repeats, one-way edges, unsorted input, int32 ids, isolated nodes: PyG's three passes' tensor."""
    rng = np.random.default_rng(seed)
    edges = torch.from_numpy(rng.integers(0, 40, size=(2, 300)))
    edges[:, :5] = torch.tensor([[3, 3, 7, 7, 9], [3, 5, 8, 8, 9]])
    expected = _pyg_canonical(edges, 50)
    for given in (edges, edges.int(), edges[:, rng.permutation(300)]):
        assert torch.equal(canonical_edges(given, 50), expected)
    assert expected.size(1) > 0
    assert torch.equal(
        canonical_edges(torch.empty(2, 0, dtype=torch.long), 5), _pyg_canonical(torch.empty(2, 0, dtype=torch.long), 5)
    )


def test_canonical_input_is_recognised_and_nearly_canonical_input_is_not():
    """Canonical edges come back as they are (no copy); each way of missing canonical form by one edge
    (a reverse dropped, a self-loop, two edges swapped, a repeat) gives PyG's tensor, not the input."""
    rng = np.random.default_rng(3)
    canonical = _pyg_canonical(torch.from_numpy(rng.integers(0, 60, size=(2, 400))), 60)
    assert canonical_edges(canonical, 60) is canonical
    src, dst = canonical
    one_way = canonical[:, 1:]  # its first edge's reverse stays
    loop = torch.cat([torch.tensor([[int(src[0])], [int(src[0])]]), canonical], dim=1)
    swapped = canonical[:, torch.tensor([1, 0, *range(2, canonical.size(1))])]
    repeated = torch.cat([canonical[:, :1], canonical], dim=1)
    for broken in (one_way, loop, swapped, repeated):
        result = canonical_edges(broken, 60)
        assert result is not broken and torch.equal(result, _pyg_canonical(broken, 60))
    assert not torch.equal(_pyg_canonical(one_way, 60), one_way)  # the broken inputs really are not canonical
