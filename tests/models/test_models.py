import pytest
import torch
from torch_geometric.nn import GCNConv

from stamen.models import MODELS, build_model


@pytest.fixture(scope="module")
def graph():
    from stamen.graphs import make_csbm

    return make_csbm(num_nodes=120, num_classes=3, num_features=16, seed=0)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_forward_shapes_and_encoder_head_split(graph, name, num_layers):
    model = build_model(name, 16, 3, hidden=8, num_layers=num_layers)
    embedding = model.embed(graph.x, graph.edge_index)
    assert embedding.shape == (graph.num_nodes, model.embedding_dim)
    logits = model(graph.x, graph.edge_index)
    assert logits.shape == (graph.num_nodes, 3)
    model.eval()
    assert torch.allclose(model.head(model.embed(graph.x, graph.edge_index)), model(graph.x, graph.edge_index))


def test_gcn_is_the_textbook_two_layer_gcn(graph):
    """Encoder (conv, ReLU, propagation) + linear head equals conv -> ReLU -> conv."""
    torch.manual_seed(0)
    model = build_model("gcn", 16, 3, hidden=8, num_layers=2, dropout=0.0).eval()
    first = model.encoder.layers[0]
    second = GCNConv(8, 3)
    with torch.no_grad():
        second.lin.weight.copy_(model.head.weight)
        second.bias.copy_(model.head.bias)
    expected = second(torch.relu(first(graph.x, graph.edge_index)), graph.edge_index)
    assert torch.allclose(model(graph.x, graph.edge_index), expected, atol=1e-5)


def test_mlp_ignores_edges(graph):
    model = build_model("mlp", 16, 3, hidden=8).eval()
    empty = torch.empty(2, 0, dtype=torch.long)
    assert torch.allclose(model(graph.x, graph.edge_index), model(graph.x, empty))


def test_unknown_model_lists_the_accepted_names():
    with pytest.raises(ValueError, match="gcn, sgc"):
        build_model("transformer", 4, 2)
