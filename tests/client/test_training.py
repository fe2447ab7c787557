import copy

import pytest
import torch

from stamen.client.device import choose_device
from stamen.graphs import FederationSpec, build_federation
from stamen.models import build_model
from stamen.models.training import adam, adam_state_record, evaluate, fit, restore_adam_state


@pytest.fixture(scope="module")
def client_graph():
    return build_federation(FederationSpec(num_clients=3, dataset_options=(("num_nodes", 900),))).clients[0]


def _loss(model, data):
    model.eval()
    with torch.no_grad():
        logits = model(data.x, data.edge_index)
        return float(torch.nn.functional.cross_entropy(logits[data.train_mask], data.y[data.train_mask]))


@pytest.mark.parametrize("name", ["gcn", "sage", "mlp"])
def test_local_training_lowers_the_loss(client_graph, name):
    torch.manual_seed(0)
    model = build_model(name, client_graph.num_features, 7, hidden=32)
    before = _loss(model, client_graph)
    fit(model, client_graph, 20, torch.optim.Adam(model.parameters(), lr=0.01))
    assert _loss(model, client_graph) < 0.8 * before


def test_proximal_term_keeps_weights_closer_to_the_start(client_graph):
    def drift(mu):
        torch.manual_seed(0)
        model = build_model("gcn", client_graph.num_features, 7, hidden=32, dropout=0.0)
        start = [p.detach().clone() for p in model.parameters()]
        fit(model, client_graph, 20, torch.optim.SGD(model.parameters(), lr=0.2), proximal_mu=mu)
        return sum(float((p - s).pow(2).sum()) for p, s in zip(model.parameters(), start))

    assert drift(2.0) < 0.5 * drift(0.0)


def test_evaluate_counts_correct_nodes(client_graph):
    model = build_model("gcn", client_graph.num_features, 7)
    result = evaluate(model, client_graph)
    assert result.num_val == int(client_graph.val_mask.sum())
    assert 0 <= result.test_correct <= result.num_test == int(client_graph.test_mask.sum())


def test_adam_state_round_trips(client_graph):
    model = build_model("gcn", client_graph.num_features, 7)
    optimizer = adam(model.parameters(), lr=0.01)
    fit(model, client_graph, 3, optimizer)
    fresh = adam(model.parameters(), lr=0.01)
    restore_adam_state(fresh, adam_state_record(optimizer))
    for (i, a), (j, b) in zip(optimizer.state_dict()["state"].items(), fresh.state_dict()["state"].items()):
        assert i == j and all(torch.equal(a[k], b[k]) for k in a)


def test_a_restored_adam_continues_as_the_original(client_graph):
    torch.manual_seed(0)
    model = build_model("gcn", client_graph.num_features, 7)
    twin = copy.deepcopy(model)
    optimizer = adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    fit(model, client_graph, 2, optimizer)
    twin.load_state_dict(model.state_dict())
    resumed = adam(twin.parameters(), lr=0.01, weight_decay=5e-4)
    restore_adam_state(resumed, adam_state_record(optimizer))
    for trained, optimizer_of in ((model, optimizer), (twin, resumed)):
        torch.manual_seed(1)
        fit(trained, client_graph, 3, optimizer_of)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters()))


def test_the_clients_adam_is_fused_and_steps_as_torchs_default(client_graph):
    torch.manual_seed(0)
    model = build_model("gcn", client_graph.num_features, 7)
    twin = copy.deepcopy(model)
    fused = adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    assert fused.defaults["fused"]
    default = torch.optim.Adam(twin.parameters(), lr=0.01, weight_decay=5e-4)
    for trained, optimizer in ((model, fused), (twin, default)):
        torch.manual_seed(1)
        fit(trained, client_graph, 5, optimizer)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(model.parameters(), twin.parameters()))


def test_device_choice_honours_cpu_and_falls_back(monkeypatch):
    assert choose_device("cpu").type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert choose_device("auto").type == "cpu"
    assert choose_device("cuda:1").type == "cpu"
