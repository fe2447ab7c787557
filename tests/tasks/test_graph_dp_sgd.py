"""Per-graph DP-SGD (stamen/tasks/graph_classification/dp_sgd.py): each graph's gradient is its own, the
clipped sum moves by at most the clip norm when one graph leaves the batch, and a step adds noise calibrated to
sigma C over the expected batch."""

import pytest
import torch
from torch_geometric.data import Batch, Data

from stamen.models.dp_sgd import DpSgdSettings
from stamen.tasks.graph_classification.dp_sgd import clipped_graph_sum, graph_loss, private_graph_step
from stamen.tasks.graph_classification.model import build_graph_classifier

CLIP = 0.05  # far below the graphs' gradient norms (about 1 to 5 here): every graph is clipped


def _graphs(count: int = 6) -> list[Data]:
    generator = torch.Generator().manual_seed(0)
    graphs = []
    for i in range(count):
        n = 5 + i
        edges = torch.randint(0, n, (2, 3 * n), generator=generator)
        graphs.append(Data(x=torch.randn(n, 4, generator=generator), edge_index=edges, y=torch.tensor([i % 2])))
    return graphs


def _model(name: str = "gin"):
    torch.manual_seed(0)
    return build_graph_classifier(name, 4, 2, hidden=16, num_layers=2, dropout=0.0)


def _gradient(model, graph) -> list[torch.Tensor]:
    model.zero_grad()
    graph_loss(model, graph).backward()
    return [p.grad.clone() for p in model.parameters()]


def _norm(tensors) -> float:
    return float(torch.sqrt(sum(t.square().sum() for t in tensors)))


@pytest.mark.parametrize("name", ["gin", "gcn"])
def test_a_graphs_gradient_in_a_batch_is_its_gradient_alone(name):
    """The record is exact: a batch's summed loss has the sum of the graphs' own gradients (no graph reaches
    another's loss), so clipping each graph's gradient bounds what that graph contributes."""
    model, graphs = _model(name), _graphs()
    batch = Batch.from_data_list(graphs)
    model.zero_grad()
    logits = model(batch.x, batch.edge_index, batch.batch, batch.num_graphs)
    torch.nn.functional.cross_entropy(logits, batch.y, reduction="sum").backward()
    together = [p.grad.clone() for p in model.parameters()]
    alone = [sum(parts) for parts in zip(*(_gradient(model, g) for g in graphs), strict=True)]
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(together, alone, strict=True))


def test_the_clipped_sum_is_each_graphs_gradient_scaled_to_the_clip_norm():
    model, graphs = _model(), _graphs()
    params = list(model.parameters())
    sums, losses = clipped_graph_sum(model, graphs, params, CLIP)
    expected = [torch.zeros_like(p) for p in params]
    for graph in graphs:
        grads = _gradient(model, graph)
        norm = _norm(grads)
        assert norm > 10 * CLIP  # the clip binds for every graph
        for total, g in zip(expected, grads, strict=True):
            total += g * CLIP / (norm + 1e-6)
    assert all(torch.allclose(a, b, atol=1e-7) for a, b in zip(sums, expected, strict=True))
    assert losses == pytest.approx([float(graph_loss(model, g).detach()) for g in graphs], rel=1e-6)


def test_one_graph_moves_the_clipped_sum_by_at_most_the_clip_norm():
    """DP-SGD's sensitivity: the batch with and without any one graph differ by at most C."""
    model, graphs = _model(), _graphs()
    params = list(model.parameters())
    everything, _ = clipped_graph_sum(model, graphs, params, CLIP)
    for i in range(len(graphs)):
        without, _ = clipped_graph_sum(model, graphs[:i] + graphs[i + 1 :], params, CLIP)
        moved = _norm([a - b for a, b in zip(everything, without, strict=True)])
        assert CLIP * (1 - 1e-4) <= moved <= CLIP * (1 + 1e-5)  # clipped to C exactly: equality is the claim


def test_a_step_is_the_clipped_sum_plus_seeded_noise_over_the_expected_batch():
    graphs, sigma, expected_batch = _graphs(), 2.0, 4
    settings = DpSgdSettings(sigma, CLIP, expected_batch)
    noiseless = DpSgdSettings(0.0, CLIP, expected_batch)

    def stepped(setting, seed):
        model = _model()
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        start = [p.detach().clone() for p in model.parameters()]
        torch.manual_seed(seed)
        private_graph_step(model, optimizer, graphs, setting)
        return torch.cat([(s - p.detach()).flatten() for s, p in zip(start, model.parameters(), strict=True)])

    clean = stepped(noiseless, 0)
    noisy, again = stepped(settings, 1), stepped(settings, 1)
    assert torch.equal(noisy, again)  # the noise comes from torch's seeded generator
    deviation = (noisy - clean) * expected_batch  # the noise itself, N(0, (sigma C)^2) per coordinate
    assert deviation.numel() > 500
    assert float(deviation.std()) == pytest.approx(sigma * CLIP, rel=0.15)
    empty = DpSgdSettings(sigma, CLIP, expected_batch)
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    assert private_graph_step(model, optimizer, [], empty) is None  # an empty Poisson batch steps on noise alone
