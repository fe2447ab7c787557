"""FedLoG's model math: the degree gate, the prototype classifier, lambda, feature scaling, generators."""

import math

import torch

from stamen.algorithms.fedlog.model import FedLoGNet, degree_gate, prototype_log_probs, scale_features, update_lambda
from stamen.algorithms.fedlog.neighbour_generator import (
    NeighbourGenerator,
    mean_neighbour_features,
    train_generator,
    with_generated_neighbours,
)


def test_degree_gate_is_a_sigmoid_of_degree_minus_gamma_plus_one():
    # node 0 is the centre of a star with 4 leaves (both directions); node 5 is isolated
    leaves, centre = torch.tensor([1, 2, 3, 4]), torch.zeros(4, dtype=torch.long)
    edge_index = torch.cat([torch.stack([centre, leaves]), torch.stack([leaves, centre])], 1)
    alpha = degree_gate(edge_index, 6, gamma=3.0)
    assert math.isclose(float(alpha[0]), 0.5, abs_tol=1e-6)  # degree 4 = gamma + 1: both branches equal
    assert math.isclose(float(alpha[1]), 1 / (1 + math.exp(3.0)), rel_tol=1e-5)  # degree 1
    assert math.isclose(float(alpha[5]), 1 / (1 + math.exp(4.0)), rel_tol=1e-5)  # isolated: mostly tail
    assert float(degree_gate(edge_index, 6, gamma=0.0)[0]) > 0.95


def test_prototype_classifier_prefers_the_nearest_prototype():
    prototypes = torch.tensor([[0.0, 0.0], [3.0, 0.0]])
    log_probs = prototype_log_probs(torch.tensor([[0.5, 0.0], [2.0, 1.0]]), prototypes)
    assert log_probs.argmax(-1).tolist() == [0, 1]
    # -||q - p_c||^2 as logits: 0.25 and 6.25 for the first query
    assert torch.allclose(log_probs[0, 0] - log_probs[0, 1], torch.tensor(6.0))


def test_model_forward_mixes_branch_probabilities_by_the_gate():
    torch.manual_seed(0)
    model = FedLoGNet(in_dim=5, num_classes=3, hidden=8, embedding=4, num_proto=2, gamma=1.0).eval()
    x = torch.randn(4, 5)
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    with torch.no_grad():
        out = model(x, edge_index)
        head, tail = model.branch_log_probs(model.encoder(x, edge_index), model.prototypes())
    alpha = degree_gate(edge_index, 4, 1.0).unsqueeze(1)
    assert torch.allclose(out.exp(), alpha * head.exp() + (1 - alpha) * tail.exp(), atol=1e-6)
    assert torch.allclose(out.exp().sum(-1), torch.ones(4), atol=1e-5)
    assert "synthetic_head" not in model.shared_state() and "encoder.convs.0.lin_l.weight" in model.shared_state()


def test_lambda_rises_above_the_threshold_and_falls_otherwise():
    lam = torch.tensor([0.5, 0.0, 1.0, 0.3, 0.2])
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3])
    predicted = labels.clone()
    predicted[2] = 0  # class 1: 1 of 2 right
    predicted[14] = 0  # class 3: 4 of 5 right = 0.8, not above the threshold
    updated = update_lambda(lam, predicted, labels, step=0.001, threshold=0.8)
    # class 0: 1.0 > 0.8 up; class 1: 0.5 down, clipped at 0; class 2: all right, clipped at 1;
    # class 3: exactly 0.8 down; class 4: no synthetic node, down
    assert torch.allclose(updated, torch.tensor([0.501, 0.0, 1.0, 0.299, 0.199]))


def test_feature_scaling_moves_each_class_towards_the_mean_by_its_lambda():
    features = torch.tensor([[0.0, 0.0], [2.0, 0.0], [4.0, 6.0]])
    labels = torch.tensor([0, 1, 1])
    scaled = scale_features(features, labels, torch.tensor([0.0, 0.5]))
    mean = features.mean(0)
    assert torch.allclose(scaled[0], features[0])  # lambda 0: unchanged
    assert torch.allclose(scaled[1], 0.5 * features[1] + 0.5 * mean)
    assert torch.allclose(scale_features(features, labels, torch.ones(2)), mean.expand(3, 2))


def test_generator_learns_mean_neighbour_features_and_builds_two_node_graphs():
    torch.manual_seed(0)
    # a path 0-1-2-3: node i's mean neighbour features are a fixed function of its own here
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    target, has = mean_neighbour_features(x, edge_index)
    assert has.all() and torch.allclose(target[1], (x[0] + x[2]) / 2)
    generator = NeighbourGenerator(2, hidden=32, dropout=0.0)
    loss = train_generator(generator, x, edge_index, torch.ones(4, dtype=torch.bool), epochs=300, lr=0.01)
    assert loss < 1e-3
    nodes, edges = with_generated_neighbours(x[:2], torch.tensor([0, 1]), [generator, generator])
    assert nodes.shape == (4, 2) and torch.equal(nodes[0], x[0])
    assert torch.allclose(nodes[1], target[0], atol=0.1)
    assert sorted(map(tuple, edges.t().tolist())) == [(0, 1), (1, 0), (2, 3), (3, 2)]
