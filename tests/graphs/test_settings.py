"""The four evaluation settings: unseen nodes, missing classes, new client, seen graph."""

import torch

from stamen.graphs import FederationSpec, build_federation
from stamen.graphs.settings import missing_classes


def _federation(**settings):
    spec = FederationSpec(num_clients=3, new_client=True, dataset_options=(("num_nodes", 600),), **settings)
    return build_federation(spec)


def test_missing_classes_are_the_rarest_present_ones():
    y = torch.tensor([0, 0, 0, 1, 2, 2, 4, 4, 4, 4])  # class 3 absent; 1 rarest, then 2
    assert missing_classes(y, 5, 2, seed=0).tolist() == [1, 2]
    assert missing_classes(y, 5, 0, seed=0).tolist() == []
    assert missing_classes(y, 5, 9, seed=0).tolist() == [0, 1, 2]  # the largest class is always kept


def test_unseen_nodes_are_cut_out_of_training_and_missing_classes_have_no_label():
    federation = _federation(unseen_node_frac=0.2, missing_classes=2)
    for client in federation.clients:
        labelled = client.train_mask | client.val_mask | client.test_mask
        touching = torch.isin(torch.arange(client.num_nodes), client.edge_index.flatten())
        assert client.unseen_mask.any() and not (labelled & client.unseen_mask).any()
        assert not (touching & client.unseen_mask).any(), "an unseen node kept an edge in the training graph"
        assert int((~labelled & ~client.missing_mask).sum()) <= int(0.2 * client.num_nodes)
        assert client.full_edge_index.size(1) > client.edge_index.size(1)
        trained = set(client.y[client.train_mask].tolist())
        missing = set(client.y[client.missing_mask].tolist())
        assert missing.isdisjoint(trained) and not (labelled & client.missing_mask & client.train_mask).any()
        assert len(missing) >= min(2, len(set(client.y.tolist())) - 1)
    assert federation.new_client is not None and federation.new_client.num_nodes > 0


def test_without_settings_the_split_is_the_plain_one():
    plain = _federation()
    for client in plain.clients:
        assert torch.equal(client.edge_index, client.full_edge_index)
        assert not client.unseen_mask.any()
        assert torch.all(torch.stack([client.train_mask, client.val_mask, client.test_mask]).sum(0) == 1)
