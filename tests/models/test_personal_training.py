"""Personalised FL's local steps (stamen/models/personal_training.py, stamen/algorithms/fedproto/prototypes.py),
without Flower."""

import copy

import pytest
import torch

from stamen.algorithms.fedproto.prototypes import (
    PrototypeClassifier,
    class_prototypes,
    fit_prototypes,
    prototype_distance,
)
from stamen.contract.run_config import RunConfig
from stamen.graphs import build_federation
from stamen.models import build_model
from stamen.models.personal_training import ENCODER, HEAD, fit_part, fit_personal, load_part, part_state
from stamen.models.training import fit


@pytest.fixture(scope="module")
def data():
    spec = RunConfig.from_flower({"csbm-nodes": 400, "seed": 3}).federation(2)
    return build_federation(spec).clients[0]


def _model(data, seed=0):
    torch.manual_seed(seed)
    return build_model("gcn", data.num_features, int(data.num_classes), hidden=16)


def _adam(model):
    return torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_parts_split_the_state_dict(data):
    model = _model(data)
    encoder, head = part_state(model, ENCODER), part_state(model, HEAD)
    assert set(head) == {"head.weight", "head.bias"} and encoder
    assert set(encoder) | set(head) == set(model.state_dict())


def test_load_part_refuses_weights_of_the_other_part(data):
    model = _model(data)
    with pytest.raises(ValueError, match=r"extra \['head.bias', 'head.weight'\]"):
        load_part(model, {**part_state(model, ENCODER), **part_state(model, HEAD)}, ENCODER)


def test_fedrep_head_phase_leaves_the_encoder_unchanged_and_the_encoder_phase_the_head(data):
    model = _model(data)
    optimizer = _adam(model)
    encoder, head = copy.deepcopy(part_state(model, ENCODER)), copy.deepcopy(part_state(model, HEAD))
    fit_part(model, data, 5, optimizer, model.head)
    assert _same(part_state(model, ENCODER), encoder)  # bit for bit: no step, no weight decay
    assert not _same(part_state(model, HEAD), head)
    head = copy.deepcopy(part_state(model, HEAD))
    fit_part(model, data, 3, optimizer, model.encoder)  # Adam now holds moments for the head: still untouched
    assert _same(part_state(model, HEAD), head)
    assert not _same(part_state(model, ENCODER), encoder)
    assert all(param.requires_grad for param in model.parameters())  # the freeze is undone


def test_ditto_without_pull_is_plain_local_training(data):
    personal, plain = _model(data), _model(data)
    anchor = [param.detach().clone() + 1.0 for param in personal.parameters()]  # far away: must not matter
    torch.manual_seed(7)
    fit_personal(personal, data, 4, _adam(personal), anchor, lam=0.0)
    torch.manual_seed(7)
    fit(plain, data, 4, _adam(plain))
    assert _same(personal.state_dict(), plain.state_dict())


def test_ditto_with_a_huge_pull_stays_at_the_global_model(data):
    model = _model(data, seed=1)
    anchor = [param.detach().clone() for param in _model(data, seed=2).parameters()]
    loss, pull = fit_personal(model, data, 3, _adam(model), anchor, lam=1e9)
    assert all(torch.allclose(p, a, atol=1e-6) for p, a in zip(model.parameters(), anchor))
    moderate = _model(data, seed=1)
    fit_personal(moderate, data, 3, _adam(moderate), anchor, lam=1.0)
    gap = sum(float((p.detach() - a).abs().max()) for p, a in zip(moderate.parameters(), anchor))
    assert gap > 1e-2 and loss > 0  # a moderate pull leaves it between its own data and the global model
    assert pull > 0  # the first step starts away from the anchor: the regulariser is reported apart


def test_prototypes_are_the_class_means_of_the_training_embeddings(data):
    model = _model(data)
    prototypes, counts = class_prototypes(model, data)
    model.eval()
    with torch.no_grad():
        embeddings = model.embed(data.x, data.edge_index)
    for c in range(int(data.num_classes)):
        nodes = data.train_mask & (data.y == c)
        assert int(counts[c]) == int(nodes.sum())
        expected = embeddings[nodes].mean(0) if nodes.any() else torch.zeros(model.embedding_dim)
        assert torch.allclose(prototypes[c], expected, atol=1e-6)


def test_the_prototype_distance_ignores_classes_without_a_global_prototype():
    embeddings = torch.tensor([[1.0, 0.0], [0.0, 2.0], [5.0, 5.0]])
    labels = torch.tensor([0, 1, 2])
    prototypes = torch.tensor([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    known = torch.tensor([True, True, False])
    per_node_and_coordinate = (1.0 + 4.0) / 2 / 2
    assert float(prototype_distance(embeddings, labels, prototypes, known)) == pytest.approx(per_node_and_coordinate)
    assert float(prototype_distance(embeddings, labels, prototypes, torch.zeros(3, dtype=torch.bool))) == 0.0


def test_prototype_training_pulls_embeddings_to_the_global_prototypes(data):
    base = _model(data)
    prototypes, counts = class_prototypes(base, data)
    target = prototypes + 1.0
    known = counts > 0
    mask = data.train_mask

    def distance(model):
        model.eval()
        with torch.no_grad():
            return float(prototype_distance(model.embed(data.x, data.edge_index)[mask], data.y[mask], target, known))

    pulled, free = copy.deepcopy(base), copy.deepcopy(base)
    torch.manual_seed(0)
    fit_prototypes(pulled, data, 20, _adam(pulled), target, known, lam=1.0)
    torch.manual_seed(0)
    fit_prototypes(free, data, 20, _adam(free), target, known, lam=0.0)
    assert distance(pulled) < 0.5 * distance(free)


def test_prediction_is_the_nearest_known_global_prototype(data):
    model = _model(data)
    classifier = PrototypeClassifier(model, int(data.num_classes))
    classifier.eval()
    with torch.no_grad():
        assert torch.equal(classifier(data.x, data.edge_index), model(data.x, data.edge_index))  # none yet: the head
        prototypes, counts = class_prototypes(model, data)
        counts[0] = 0  # class 0 has no global prototype: never predicted
        classifier.set_prototypes(prototypes, counts)
        predicted = classifier(data.x, data.edge_index).argmax(-1)
        embeddings = model.embed(data.x, data.edge_index)
    distances = torch.cdist(embeddings.double(), prototypes.double())
    distances[:, 0] = float("inf")
    nearest = distances.topk(2, largest=False)
    clear = nearest.values[:, 1] - nearest.values[:, 0] > 1e-4  # no near-tie that rounding could flip
    assert int(clear.sum()) > 0.9 * data.num_nodes
    assert torch.equal(predicted[clear], nearest.indices[clear, 0])
    assert not bool((predicted == 0).any())
    with pytest.raises(ValueError, match="do not fit"):
        classifier.set_prototypes(prototypes[:, :3], counts)
