import numpy as np
import pytest
import torch

from stamen.graphs import FederationSpec, build_federation, client_subgraph, load_dataset, partition_nodes
from stamen.graphs.names import partitioners


@pytest.fixture(scope="module")
def cora(shared_datasets):
    return load_dataset("cora", shared_datasets)


@pytest.mark.parametrize("method", partitioners())
def test_parts_cover_every_node_exactly_once(cora, method):
    parts = partition_nodes(cora, 10, method, seed=0)
    assert len(parts) == 10
    every = np.concatenate(parts)
    assert np.array_equal(np.sort(every), np.arange(cora.num_nodes))


@pytest.mark.parametrize("method", partitioners())
def test_same_seed_same_parts_other_seed_other_parts(cora, method):
    first = partition_nodes(cora, 10, method, seed=0)
    again = partition_nodes(cora, 10, method, seed=0)
    other = partition_nodes(cora, 10, method, seed=1)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))


@pytest.mark.parametrize("method,tolerance", [("louvain", 0.05), ("metis", 0.05)])
def test_structural_partitioners_are_balanced(cora, method, tolerance):
    sizes = np.array([part.size for part in partition_nodes(cora, 10, method, seed=0)])
    assert sizes.max() <= (1 + tolerance) * cora.num_nodes / 10
    assert sizes.min() >= (1 - tolerance) * cora.num_nodes / 10


def test_client_subgraph_keeps_no_cross_client_edge(cora):
    parts = partition_nodes(cora, 10, "louvain", seed=0)
    owner = np.empty(cora.num_nodes, dtype=np.int64)
    for i, part in enumerate(parts):
        owner[part] = i
    kept = 0
    for i, part in enumerate(parts):
        sub = client_subgraph(cora, part)
        global_src = sub.global_id[sub.edge_index[0]].numpy()
        global_dst = sub.global_id[sub.edge_index[1]].numpy()
        assert np.all(owner[global_src] == i) and np.all(owner[global_dst] == i)
        assert torch.equal(sub.x, cora.x[sub.global_id])
        kept += sub.edge_index.size(1)
    src, dst = cora.edge_index.numpy()
    assert kept == np.count_nonzero(owner[src] == owner[dst])


def test_louvain_cuts_fewer_edges_than_label_dirichlet(shared_datasets):
    structural = build_federation(FederationSpec("cora", 10, "louvain", data_root=str(shared_datasets)))
    random_like = build_federation(FederationSpec("cora", 10, "label-dirichlet", data_root=str(shared_datasets)))
    assert structural.cut_edges < random_like.cut_edges / 2


def test_more_clients_than_nodes_is_refused(cora):
    with pytest.raises(ValueError, match="between 1 and 2708"):
        partition_nodes(cora, 3000, "louvain")


def test_unknown_partitioner_lists_the_accepted_names(cora):
    with pytest.raises(ValueError, match="label-dirichlet, louvain, metis, random"):
        partition_nodes(cora, 3, "spectral")


def test_splits_are_disjoint_deterministic_and_the_new_client_is_held_out():
    spec = FederationSpec(num_clients=4, new_client=True, dataset_options=(("num_nodes", 500),))
    federation = build_federation(spec)
    assert len(federation.clients) == 4 and federation.new_client is not None
    sizes = sum(c.num_nodes for c in federation.clients) + federation.new_client.num_nodes
    assert sizes == 500
    for client in federation.clients:
        masks = torch.stack([client.train_mask, client.val_mask, client.test_mask])
        assert torch.all(masks.sum(0) == 1)
    build_federation.cache_clear()
    again = build_federation(spec)
    assert all(torch.equal(a.train_mask, b.train_mask) for a, b in zip(federation.clients, again.clients))


def test_partitions_are_cached_on_disk_by_content(cora, writable_cache, monkeypatch):
    from stamen.graphs import federation

    first = federation.cached_partition(cora, 7, "louvain", 3, 0.5)
    files = list((writable_cache / "partitions").glob("*.npz"))
    assert files, "the partition was not stored"
    monkeypatch.setattr(federation, "partition_nodes", lambda *a, **k: pytest.fail("recomputed a cached partition"))
    again = federation.cached_partition(cora, 7, "louvain", 3, 0.5)
    assert all(np.array_equal(a, b) for a, b in zip(first, again)) and len(again) == 7
    with pytest.raises(pytest.fail.Exception):  # another seed is another partition
        federation.cached_partition(cora, 7, "louvain", 4, 0.5)
