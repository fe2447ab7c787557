"""graphs-synth: the same seed gives the same graphs, the classes are dealt evenly, the class is in the
structure (a planted clique) and not in the features' own distribution; graph sets are shared out whole."""

import numpy as np
import pytest
import torch

from stamen.graphs import FederationSpec, build_federation
from stamen.graphs.graph_sets import MAX_DEGREE, MAX_NODES, MIN_NODES, NUM_FEATURES, make_graph_set


def _same(a, b) -> bool:
    return all(torch.equal(x[k], y[k]) for x, y in zip(a, b, strict=True) for k in ("x", "edge_index", "y"))


def test_the_same_seed_gives_the_same_graphs_and_another_seed_others():
    assert _same(make_graph_set(3, 40), make_graph_set(3, 40))
    assert not _same(make_graph_set(3, 40), make_graph_set(4, 40))


@pytest.mark.parametrize("num_graphs", [41, 400])
def test_classes_are_dealt_evenly(num_graphs):
    counts = torch.bincount(torch.cat([g.y for g in make_graph_set(0, num_graphs)]), minlength=2)
    assert counts.sum() == num_graphs and abs(int(counts[0]) - int(counts[1])) <= 1


def test_graphs_are_small_undirected_and_featured_by_degree():
    for graph in make_graph_set(1, 60):
        n, edges = graph.num_nodes, graph.edge_index
        assert MIN_NODES <= n <= MAX_NODES and graph.x.shape == (n, NUM_FEATURES)
        assert bool((edges[0] != edges[1]).all())  # no self-loop
        codes = set((edges[0] * n + edges[1]).tolist())
        assert codes == set((edges[1] * n + edges[0]).tolist())  # both directions
        degree = torch.bincount(edges[0], minlength=n).clamp(max=MAX_DEGREE)
        assert torch.equal(graph.x[:, : MAX_DEGREE + 1].argmax(dim=1), degree)


def _has_clique(graph, size: int) -> bool:
    """Whether ``graph`` has ``size`` nodes all joined to each other (networkx's maximal cliques)."""
    import networkx as nx

    network = nx.Graph(graph.edge_index.t().tolist())
    return any(len(clique) >= size for clique in nx.find_cliques(network))


def test_class_one_graphs_hold_a_planted_clique_and_class_zero_graphs_seldom_do():
    graphs = make_graph_set(2, 200)
    ones = [g for g in graphs if int(g.y) == 1]
    zeros = [g for g in graphs if int(g.y) == 0]
    assert all(_has_clique(g, 5) for g in ones)
    assert sum(_has_clique(g, 5) for g in zeros) <= 2  # 5-cliques in G(n, p) here: expected < 0.005 a graph


@pytest.mark.parametrize("partitioner", ["random", "label-dirichlet"])
def test_a_graph_set_is_shared_out_whole_and_split_by_the_fractions(partitioner):
    spec = FederationSpec(dataset="graphs-synth", num_clients=3, partitioner=partitioner, seed=5)
    federation = build_federation(spec)
    assert np.array_equal(np.sort(np.concatenate(federation.parts)), np.arange(len(federation.graph.y)))
    assert federation.cut_edges == 0 and federation.new_client is None
    for client, part in zip(federation.clients, federation.parts, strict=True):
        assert client.num_graphs == part.size
        masks = torch.stack([client.train_mask, client.val_mask, client.test_mask])
        assert bool((masks.sum(dim=0) == 1).all())  # each graph in exactly one split
        assert int(client.train_mask.sum()) == int(0.6 * part.size)
        assert torch.equal(client.y, federation.graph.y[torch.from_numpy(part)])
    again = build_federation.__wrapped__(spec)  # not the cached object: computed afresh, the same
    assert all(np.array_equal(a, b) for a, b in zip(federation.parts, again.parts, strict=True))


def test_random_deals_graphs_evenly():
    federation = build_federation(FederationSpec(dataset="graphs-synth", num_clients=3, partitioner="random"))
    assert sorted(part.size for part in federation.parts) == [133, 133, 134]


def test_a_graph_set_is_not_one_graph_for_the_loaders():
    from stamen.graphs import load_dataset

    with pytest.raises(ValueError, match="set of small graphs, read by task='graph-classification' only"):
        load_dataset("graphs-synth")
    with pytest.raises(ValueError, match="partitioner='louvain' cuts one graph"):
        build_federation(FederationSpec(dataset="graphs-synth", num_clients=3, partitioner="louvain"))


def test_a_host_reads_back_exactly_its_clients_graphs_and_a_graph_leaving_edge_is_refused(tmp_path):
    """A deployment's host holds its client's exported graphs: the batch it rebuilds is the simulation's."""
    from stamen.client.job import client_data
    from stamen.graphs.node_data import PARTITION_FILE, export_partitions, load_partition

    spec = FederationSpec(dataset="graphs-synth", num_clients=3, partitioner="label-dirichlet", seed=2)
    roots = [path.parent for path in export_partitions(spec, tmp_path / "out")]
    expected = build_federation(spec).clients
    for index, root in enumerate(roots):
        data = client_data(FederationSpec(**{**spec.__dict__, "data_root": str(root)}), index, torch.device("cpu"))
        for name in ("x", "edge_index", "y", "batch", "ptr", "train_mask", "val_mask", "test_mask"):
            assert torch.equal(getattr(data, name), getattr(expected[index], name)), (index, name)
        assert data.num_classes == expected[index].num_classes and data.num_graphs == expected[index].num_graphs
        assert _same(data.to_data_list(), expected[index].to_data_list())
    stored = torch.load(roots[0] / PARTITION_FILE, weights_only=True)
    stored["edge_index"][1, 0] = int(stored["graph_nodes"][0])  # the first graph's first edge ends in the second
    torch.save(stored, roots[0] / PARTITION_FILE)
    with pytest.raises(ValueError, match="edge_index joins nodes of different graphs"):
        load_partition(FederationSpec(**{**spec.__dict__, "data_root": str(roots[0])}), 0)


def test_the_partition_command_counts_a_graph_sets_graphs(capsys):
    import json

    from stamen.cli.main import main as stamen

    assert (
        stamen(["partition", "--dataset", "graphs-synth", "--clients", "3", "--partitioner", "random", "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["num_graphs"] == 400 and [c["graphs"] for c in report["clients"]] == [134, 133, 133]
    assert all(sum(c["class_counts"]) == c["graphs"] for c in report["clients"])
