"""Requests: the parser's errors, and what retraining sees (no forgotten node, no incident edge)."""

import pytest
import torch

from stamen.contract.requests import Request, parse_request
from stamen.graphs import build_federation
from stamen.unlearn.requests import split_federation


def test_parse_good_requests():
    assert parse_request("client:2", 5, 7) == Request("client", client=2)
    assert parse_request("nodes:0:0.5", 5, 7) == Request("nodes", client=0, fraction=0.5)
    assert parse_request("nodes:4:1", 5, 7).fraction == 1.0
    assert parse_request(" class:6 ", 5, 7) == Request("class", label=6)
    assert Request("nodes", client=0, fraction=0.5).slug == "nodes-0-0.5"


@pytest.mark.parametrize(
    "text, needle",
    [
        ("client:5", "client 5 is out of range 0..4"),
        ("client:-1", "client -1 is out of range 0..4"),
        ("nodes:9:0.5", "client 9 is out of range 0..4"),
        ("nodes:1:0", "fraction 0 must lie in (0, 1]"),
        ("nodes:1:1.5", "fraction 1.5 must lie in (0, 1]"),
        ("nodes:1:half", "fraction 'half' is not a number"),
        ("nodes:1", "must look like nodes:i:FRACTION"),
        ("class:7", "class 7 is out of range 0..6"),
        ("class:x", "'x' is not an integer"),
        ("edges:1", "unknown request 'edges:1'"),
    ],
)
def test_parse_errors_are_one_clear_line(text, needle):
    with pytest.raises(ValueError) as error:
        parse_request(text, 5, 7)
    assert needle in str(error.value) and "\n" not in str(error.value)


def _edges(data):
    ids = data.global_id
    return {(int(ids[a]), int(ids[b])) for a, b in data.edge_index.t().tolist()}


@pytest.mark.parametrize("text", ["nodes:1:0.5", "class:2", "client:0"])
def test_remaining_graph_has_no_forgotten_node_or_edge(small_config, text):
    federation = build_federation(small_config().federation(3))
    request = parse_request(text, 3, 4)
    split = split_federation(federation.clients, request, seed=1)
    forgotten = set(split.forget_ids.tolist())
    assert forgotten
    for index, data in zip(split.remaining_clients, split.remaining):
        original = federation.clients[index]
        ids = set(data.global_id.tolist())
        assert not ids & forgotten
        kept_edges = _edges(data)
        assert all(a not in forgotten and b not in forgotten for a, b in kept_edges)
        # every original edge between two surviving nodes is still there
        expected = {(a, b) for a, b in _edges(original) if a not in forgotten and b not in forgotten}
        assert kept_edges == expected
        # labels, features and masks followed their nodes
        position = {g: i for i, g in enumerate(original.global_id.tolist())}
        rows = torch.tensor([position[g] for g in data.global_id.tolist()])
        assert torch.equal(data.x, original.x[rows]) and torch.equal(data.y, original.y[rows])
        assert torch.equal(data.test_mask, original.test_mask[rows])
    if request.kind == "client":
        assert split.remaining_clients == [1, 2]
        assert forgotten == set(federation.clients[0].global_id[federation.clients[0].train_mask].tolist())
    if request.kind == "class":
        labels = federation.graph.y[split.forget_ids]
        assert (labels == 2).all()
        train_of_class = sum(int((c.train_mask & (c.y == 2)).sum()) for c in federation.clients)
        assert len(forgotten) == train_of_class
    if request.kind == "nodes":
        train = int(federation.clients[1].train_mask.sum())
        assert len(forgotten) == round(0.5 * train)
        assert forgotten <= set(federation.clients[1].global_id[federation.clients[1].train_mask].tolist())
        other = split_federation(federation.clients, request, seed=2).forget_ids
        assert not torch.equal(other, split.forget_ids)  # the seed picks the nodes


def test_dropping_nodes_keeps_every_node_attribute_and_edge_list(small_config):
    """A client that drops nodes must report what one that drops none reports (the same metric keys)."""
    from stamen.unlearn.requests import drop_nodes

    config = small_config(unseen_node_frac=0.2, missing_classes=1)
    data = build_federation(config.federation(3)).clients[0]
    drop = torch.zeros(data.num_nodes, dtype=torch.bool)
    drop[: data.num_nodes // 3] = True
    kept = drop_nodes(data, drop)
    assert set(kept.keys()) == set(data.keys())
    for key in ("unseen_mask", "missing_mask", "train_mask", "x", "global_id"):
        if key in data:
            assert torch.equal(kept[key], data[key][~drop]), key
    for key in ("edge_index", "full_edge_index"):
        if key in data:
            assert int(kept[key].max()) < kept.num_nodes
            assert kept[key].size(1) < data[key].size(1)
