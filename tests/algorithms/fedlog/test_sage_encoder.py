"""SAGEEncoder is PyG's two-layer GraphSAGE: the same parameters, the same function
(stamen/algorithms/fedlog/sage_encoder.py)."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.nn.models import GraphSAGE

from stamen.algorithms.fedlog.sage_encoder import SAGEEncoder
from stamen.models.sparse_product import SparseMatrix


def _graph(sparse: bool) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    x = torch.rand(40, 60, generator=generator)
    if sparse:  # a bag of words: about 4% of the entries
        x = (x < 0.04).float()
    edges = torch.randint(0, 40, (2, 150), generator=generator)
    return x, torch.cat([edges, torch.tensor([[0], [0]])], dim=1)  # a self-loop too


def _pair(dropout: float) -> tuple[GraphSAGE, SAGEEncoder]:
    torch.manual_seed(0)
    theirs = GraphSAGE(60, 16, num_layers=2, out_channels=8, dropout=dropout)
    torch.manual_seed(0)
    return theirs, SAGEEncoder(60, 16, 8, dropout)


def test_the_same_parameters_drawn_alike():
    theirs, ours = _pair(0.5)
    expected, got = theirs.state_dict(), ours.state_dict()
    assert list(got) == list(expected)
    assert all(torch.equal(got[name], expected[name]) for name in expected)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("training", [False, True])
def test_the_same_function_and_gradients(sparse, training):
    theirs, ours = _pair(0.5)
    x, edges = _graph(sparse)
    seen = []
    ours.convs[0].register_forward_pre_hook(lambda module, args: seen.append(type(args[0])))
    outputs, gradients = [], []
    for model in (theirs, ours):
        model.train(training)
        torch.manual_seed(7)  # the same dropout draws
        out = model(x, edges)
        out.pow(2).sum().backward()
        outputs.append(out)
        gradients.append({name: p.grad for name, p in model.named_parameters()})
    assert seen == [SparseMatrix if sparse else torch.Tensor]
    torch.testing.assert_close(outputs[1], outputs[0], rtol=1e-5, atol=1e-5)
    for name, grad in gradients[0].items():
        torch.testing.assert_close(gradients[1][name], grad, rtol=1e-4, atol=1e-5)


def test_features_that_need_a_gradient_stay_dense():
    """FedLoG's synthetic nodes are trained: their product stays dense, and their gradient is PyG's."""
    theirs, ours = _pair(0.0)
    x, edges = _graph(True)
    grads = []
    for model in (theirs, ours):
        features = x.clone().requires_grad_()
        model(features, edges).sum().backward()
        grads.append(features.grad)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("training", [False, True])
def test_isolated_nodes_are_the_graph_of_self_loops(training):
    """FedLoG's synthetic nodes: one product a layer gives the function (and gradients) of the self-loop graph."""
    _, encoder = _pair(0.5)
    encoder.train(training)
    generator = torch.Generator().manual_seed(5)
    x = torch.rand(30, 60, generator=generator)
    loops = torch.arange(30).repeat(2, 1)
    results = []
    for compute in (lambda features: encoder(features, loops), encoder.isolated):
        features = x.clone().requires_grad_()
        encoder.zero_grad()
        torch.manual_seed(9)  # the same dropout draws
        out = compute(features)
        out.pow(2).sum().backward()
        results.append((out, features.grad, [p.grad.clone() for p in encoder.parameters()]))
    (graph, graph_x, graph_w), (alone, alone_x, alone_w) = results
    torch.testing.assert_close(alone, graph, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(alone_x, graph_x, rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(alone_w, graph_w):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)
