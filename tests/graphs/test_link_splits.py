"""Link prediction's edge splits: disjoint, seeded, no held-out edge in the message-passing graph,
non-edges that are non-edges; the cut edges are the partition's and nothing a client trains on."""

import numpy as np
import torch

from stamen.graphs import make_csbm
from stamen.graphs.link_splits import cut_links, sample_non_edges, split_links, undirected_edges
from stamen.graphs.partition import client_subgraph, partition_nodes


def _graph():
    return make_csbm(num_nodes=300, num_classes=3, avg_degree=8.0, homophily=0.8, num_features=8, seed=3)


def _codes(pairs: torch.Tensor, n: int) -> set[int]:
    u, v = pairs.numpy()
    return set((np.minimum(u, v) * n + np.maximum(u, v)).tolist())


def test_a_split_is_disjoint_covering_and_leak_free():
    graph = _graph()
    n = int(graph.num_nodes)
    split = split_links(graph.edge_index, n, 0.1, 0.2, seed=5)
    edges = undirected_edges(graph.edge_index)
    every = set((edges[:, 0] * n + edges[:, 1]).tolist())
    train, val, test = (_codes(t, n) for t in (split.train, split.val, split.test))
    assert not (train & val or train & test or val & test)
    assert train | val | test == every
    assert len(test) == int(0.2 * len(every)) and len(val) == int(0.1 * len(every))
    # the encoder's graph holds the training edges, in both directions, and nothing held out
    assert _codes(split.message_edges, n) == train
    assert split.message_edges.size(1) == 2 * len(train)
    for negatives in (split.val_neg, split.test_neg):
        u, v = negatives.numpy()
        assert np.all(u < v)
        assert not (_codes(negatives, n) & every)
    assert split.val_neg.size(1) == len(val) and split.test_neg.size(1) == len(test)
    assert not (_codes(split.val_neg, n) & _codes(split.test_neg, n))


def test_a_split_is_seeded():
    graph = _graph()
    a, b = (split_links(graph.edge_index, int(graph.num_nodes), 0.05, 0.1, seed=1) for _ in range(2))
    c = split_links(graph.edge_index, int(graph.num_nodes), 0.05, 0.1, seed=2)
    assert all(torch.equal(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    assert not torch.equal(a.test, c.test)


def test_non_edges_of_a_dense_graph_are_all_there_is():
    edges = np.array([[0, 1], [0, 2], [1, 2], [2, 3]])  # 4 nodes: 6 pairs, 2 non-edges
    found = sample_non_edges(4, edges, 10, np.random.default_rng(0))
    assert sorted(map(tuple, found.tolist())) == [(0, 3), (1, 3)]


def test_cut_links_are_the_partitions_cut_edges_scored_on_the_training_graph():
    graph = _graph()
    n = int(graph.num_nodes)
    parts = partition_nodes(graph, 3, "louvain", seed=0)
    owner = np.empty(n, dtype=np.int64)
    for i, part in enumerate(parts):
        owner[part] = i
    splits = [
        split_links(client_subgraph(graph, part).edge_index, len(part), 0.05, 0.1, seed=i)
        for i, part in enumerate(parts)
    ]
    every = undirected_edges(graph.edge_index)
    edge_codes = set((every[:, 0] * n + every[:, 1]).tolist())
    cut = {c for c in edge_codes if owner[c // n] != owner[c % n]}
    found = [cut_links(graph.edge_index, parts, splits, i, seed=7) for i in range(3)]
    assigned = [_codes(links.edges, n) for links in found]
    assert set().union(*assigned) == cut and sum(len(a) for a in assigned) == len(cut)  # each cut edge once
    for i, links in enumerate(found):
        u, v = links.edges.numpy()
        assert np.all(owner[u] == i) and np.all(owner[v] > i)  # assigned to the lower partition id
        a, b = links.non_edges.numpy()
        assert np.all(owner[a] == i) and np.all(owner[b] > i)
        assert not (_codes(links.non_edges, n) & edge_codes)
        assert links.non_edges.size(1) == links.edges.size(1)
        # the scoring graph: every client's training edges, no cut edge and no held-out edge
        training = set().union(*(_codes(torch.as_tensor(parts[j])[s.train], n) for j, s in enumerate(splits)))
        assert _codes(links.message_edges, n) == training
        assert not (training & cut)
    assert torch.equal(found[0].non_edges, cut_links(graph.edge_index, parts, splits, 0, seed=7).non_edges)
