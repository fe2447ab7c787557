"""Feature dropout: the dense draw's output distribution, drawing for non-zero entries only, sparse or dense."""

from __future__ import annotations

import torch

from stamen.models import build_model
from stamen.models.feature_dropout import feature_dropout, sparse_feature_dropout
from stamen.models.sparse_product import sparse_features


def _sparse_features(rows: int = 200, cols: int = 300, density: float = 0.05, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    values = torch.rand(rows, cols, generator=generator) + 0.5
    return values * (torch.rand(rows, cols, generator=generator) < density)


def test_zeros_stay_zero_and_kept_entries_are_scaled():
    x = _sparse_features()
    torch.manual_seed(1)
    out = feature_dropout(x, 0.5, True)
    assert torch.all(out[x == 0] == 0)
    kept = out != 0
    assert torch.allclose(out[kept], 2 * x[kept])
    dropped = float(1 - kept.sum() / (x != 0).sum())
    assert 0.45 < dropped < 0.55  # 3,000 non-zero entries: a fair coin each


def test_keeps_each_entry_with_probability_one_minus_p():
    x = _sparse_features(rows=50, cols=40, density=0.1)
    torch.manual_seed(2)
    kept = torch.stack([feature_dropout(x, 0.3, True) != 0 for _ in range(400)]).float().mean(0)
    assert torch.all(kept[x == 0] == 0)
    assert abs(float(kept[x != 0].mean()) - 0.7) < 0.01
    assert float((kept[x != 0] - 0.7).abs().max()) < 0.15  # no entry is always kept or always dropped


def test_same_seed_same_draws():
    x = _sparse_features()
    torch.manual_seed(3)
    first = feature_dropout(x, 0.5, True)
    torch.manual_seed(3)
    assert torch.equal(first, feature_dropout(x, 0.5, True))


def test_dense_gradient_and_evaluation_inputs_take_torch_dropout():
    dense = torch.rand(30, 20) + 0.1
    for x in (dense, _sparse_features().requires_grad_()):
        torch.manual_seed(4)
        expected = torch.nn.functional.dropout(x, 0.5, True)
        torch.manual_seed(4)
        assert torch.equal(feature_dropout(x, 0.5, True), expected)
    x = _sparse_features()
    assert torch.equal(feature_dropout(x, 0.5, False), x)


def test_sparse_and_dense_feature_dropout_draw_the_same_numbers():
    x = _sparse_features()
    torch.manual_seed(7)
    dense = feature_dropout(x, 0.4, True)
    torch.manual_seed(7)
    sparse = sparse_feature_dropout(sparse_features(x), 0.4, True)
    assert torch.equal(sparse.csr.to_dense(), dense)


def test_a_written_tensor_has_its_positions_found_again():
    x = torch.zeros(20, 30)
    x[0, 0] = 1.0
    feature_dropout(x, 0.5, True)
    x[5, 7] = 3.0  # in place: the cached positions are stale
    outputs = [feature_dropout(x, 0.5, True) for _ in range(50)]
    assert any(float(out[5, 7]) == 6.0 for out in outputs)


def test_model_trains_through_sparse_input_dropout():
    x = _sparse_features(rows=40, cols=60)
    path = torch.arange(39)
    edge_index = torch.stack([torch.cat([path, path + 1]), torch.cat([path + 1, path])])
    torch.manual_seed(0)
    model = build_model("gcn", 60, 3, hidden=8, dropout=0.5)
    model.train()
    model(x, edge_index).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
