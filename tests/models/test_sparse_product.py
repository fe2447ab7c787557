"""Sparse products: equal to the dense ones with their gradients; the GCN and SAGE layers equal PyG's; the cache."""

from __future__ import annotations

import copy
import gc

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, SAGEConv, SimpleConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm

import stamen.models.object_cache as object_cache  # its entries
from stamen.models import build_model
from stamen.models.object_cache import kept
from stamen.models.sparse_layers import GCNLayer, LinearLayer, SAGELayer
from stamen.models.sparse_product import SparsePattern, gcn_adjacency, mean_adjacency, sparse_features


def _sparse(rows: int, cols: int, density: float, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.randn(rows, cols, generator=generator)
    return values * (torch.rand(rows, cols, generator=generator) < density)


def _graph(nodes: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    edges = torch.randint(0, nodes, (2, 3 * nodes), generator=generator)
    edges = torch.cat([edges, edges[:, :5], torch.tensor([[0, 1], [0, 1]])], dim=1)  # duplicates and self-loops
    return torch.cat([edges, edges.flip(0)], dim=1)


@pytest.mark.parametrize("density", [0.0, 0.02, 0.3])
def test_product_and_its_gradient_equal_the_dense_ones(density):
    s = _sparse(30, 50, density, seed=1)
    s[3] = 0  # an empty row
    rows, cols = s.nonzero(as_tuple=True)
    matrix = SparsePattern.of(rows, cols, (30, 50)).with_values(s[rows, cols])
    b = torch.randn(50, 4, requires_grad=True)
    out = matrix @ b
    weights = torch.randn(30, 4)
    (out * weights).sum().backward()
    assert torch.allclose(out, s @ b.detach(), atol=1e-5)
    assert torch.allclose(b.grad, s.t() @ weights, atol=1e-5)


def test_new_values_reach_the_transpose():
    s = _sparse(20, 25, 0.2, seed=2)
    rows, cols = s.nonzero(as_tuple=True)
    scaled = torch.rand(rows.numel())
    matrix = SparsePattern.of(rows, cols, (20, 25)).with_values(s[rows, cols]).with_values(scaled)
    expected = torch.zeros(20, 25)
    expected[rows, cols] = scaled
    b = torch.randn(25, 3, requires_grad=True)
    (matrix @ b).sum().backward()
    assert torch.allclose(matrix.csr.to_dense(), expected)
    assert torch.allclose(b.grad, expected.t() @ torch.ones(20, 3), atol=1e-5)


def test_gcn_adjacency_propagates_as_pyg_does():
    edge_index = _graph(40, seed=3)
    h = torch.randn(40, 6)
    normalised, weight = gcn_norm(edge_index, None, 40, add_self_loops=True)
    expected = SimpleConv(aggr="sum")(h, normalised, weight)
    assert torch.allclose(gcn_adjacency(edge_index, 40, h.dtype) @ h, expected, atol=1e-5)


def test_mean_adjacency_aggregates_as_pyg_does():
    edge_index = _graph(40, seed=12)
    edge_index = edge_index[:, edge_index[1] != 7]  # node 7 has no in-edges: its mean is 0
    h = torch.randn(40, 6)
    expected = SimpleConv(aggr="mean")(h, edge_index)
    assert torch.allclose(mean_adjacency(edge_index, 40, h.dtype) @ h, expected, atol=1e-5)


@pytest.mark.parametrize("sparse_input", [False, True])
@pytest.mark.parametrize("ours_class, theirs_class", [(GCNLayer, GCNConv), (SAGELayer, SAGEConv)])
def test_layers_equal_pyg_ones(sparse_input, ours_class, theirs_class):
    edge_index = _graph(40, seed=4)
    x = _sparse(40, 60, 0.05, seed=5)
    torch.manual_seed(0)
    ours = ours_class(60, 8)
    theirs = theirs_class(60, 8)
    theirs.load_state_dict(ours.state_dict())
    weights = torch.randn(40, 8)
    (ours(sparse_features(x) if sparse_input else x, edge_index) * weights).sum().backward()
    (theirs(x, edge_index) * weights).sum().backward()
    assert set(ours.state_dict()) == set(theirs.state_dict())
    for mine, pyg in zip(ours.parameters(), theirs.parameters()):
        assert torch.allclose(mine.grad, pyg.grad, atol=1e-4)
    assert torch.allclose(ours(x, edge_index), theirs(x, edge_index), atol=1e-5)


def test_linear_layer_on_sparse_input_equals_linear():
    x = _sparse(30, 40, 0.1, seed=6)
    layer = LinearLayer(40, 5)
    weights = torch.randn(30, 5)
    (layer(sparse_features(x)) * weights).sum().backward()
    grads = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    (torch.nn.functional.linear(x, layer.weight, layer.bias) * weights).sum().backward()
    for sparse_grad, param in zip(grads, layer.parameters()):
        assert torch.allclose(sparse_grad, param.grad, atol=1e-5)


@pytest.mark.parametrize("name", ["gcn", "sage", "mlp", "appnp"])
def test_a_model_computes_the_same_with_its_first_layer_on_sparse_or_dense_features(name):
    """Dropout draws the same numbers for the features either way, so training outputs agree too."""
    edge_index = _graph(50, seed=7)
    x = _sparse(50, 80, 0.05, seed=8)
    torch.manual_seed(0)
    model = build_model(name, 80, 3, hidden=16, dropout=0.5)
    first = model.encoder.layers[0]
    outputs = []
    for takes_sparse in (True, False):
        first.takes_sparse = takes_sparse
        torch.manual_seed(1)
        model.train()
        trained = model(x, edge_index)
        model.eval()
        outputs.append((trained, model(x, edge_index)))
    assert torch.allclose(outputs[0][0], outputs[1][0], atol=1e-5)
    assert torch.allclose(outputs[0][1], outputs[1][1], atol=1e-5)
    assert not torch.allclose(outputs[0][0], outputs[0][1])  # dropout did draw in training


def test_models_keep_pyg_parameter_names():
    assert list(build_model("gcn", 10, 3, hidden=4).state_dict()) == [
        "encoder.layers.0.bias",
        "encoder.layers.0.lin.weight",
        "head.weight",
        "head.bias",
    ]
    assert list(build_model("sage", 10, 3, hidden=4).state_dict()) == [
        "encoder.layers.0.lin_l.weight",
        "encoder.layers.0.lin_l.bias",
        "encoder.layers.0.lin_r.weight",
        "head.weight",
        "head.bias",
    ]


def test_kept_builds_again_after_a_write_and_forgets_a_freed_object():
    x = torch.zeros(5)
    calls = []
    assert kept(x, "k", lambda: calls.append(1) or len(calls)) == 1
    assert kept(x, "k", lambda: calls.append(1) or len(calls)) == 1
    assert kept(x, "other", lambda: calls.append(1) or len(calls)) == 2  # another key
    x[0] = 1.0  # a write: the version counter moves
    assert kept(x, "k", lambda: calls.append(1) or len(calls)) == 3
    size = len(object_cache._CACHE)
    del x
    gc.collect()
    assert len(object_cache._CACHE) == size - 2


def test_kept_serves_an_object_not_a_copy_of_it():
    data = Data(x=torch.zeros(3, 2))
    assert kept(data, "k", lambda: "first") == "first"
    assert kept(data, "k", lambda: "again") == "first"
    assert kept(copy.copy(data), "k", lambda: "copy") == "copy"


def test_a_model_runs_under_inference_mode():
    model = build_model("gcn", 80, 3, hidden=16).eval()
    x, edge_index = _sparse(50, 80, 0.05, seed=13), _graph(50, seed=14)
    expected = model(x, edge_index)
    with torch.inference_mode():
        inferred = model(x.clone(), edge_index.clone())  # inference tensors: no version counter
    assert torch.allclose(inferred, expected)


def test_dense_and_gradient_features_stay_dense():
    assert sparse_features(torch.rand(10, 10) + 0.1) is None
    assert sparse_features(_sparse(10, 10, 0.1, seed=9).requires_grad_()) is None
    assert sparse_features(torch.zeros(10, dtype=torch.long)) is None


def test_a_watched_first_layer_gets_a_dense_tensor():
    """Forward hooks (Opacus's, DP-SGD's tape) read their layer's inputs as tensors."""
    model = build_model("mlp", 80, 3, hidden=16)
    seen = []
    model.encoder.layers[0].register_forward_hook(lambda layer, inputs, output: seen.append(inputs[0]))
    model(_sparse(50, 80, 0.05, seed=10), _graph(50, seed=11))
    assert isinstance(seen[0], torch.Tensor)
