"""A mended graph's features as two row blocks (stamen/models/stacked_rows.py): every model computes what it
computes on the stacked dense matrix, and input dropout falls on the graph's own rows only."""

from __future__ import annotations

import pytest
import torch

from stamen.algorithms.fedsage.model import MendedClassifier, NeighGen, mended_once, weights_digest
from stamen.models.node_classifier import build_model
from stamen.models.stacked_rows import StackedRows

FEATURES, CLASSES = 60, 3


def _graph(n: int = 40, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, FEATURES, generator=g) < 0.05).float()
    x[torch.arange(n), torch.randint(0, FEATURES, (n,), generator=g)] = 1.0
    edges = torch.randint(0, n, (2, 3 * n), generator=g)
    return x, torch.cat([edges, edges.flip(0)], dim=1)


def _rows(n: int = 40, added: int = 25) -> tuple[StackedRows, torch.Tensor]:
    x, edges = _graph(n)
    bottom = torch.randn(added, FEATURES, generator=torch.Generator().manual_seed(1))
    extra = torch.stack([torch.arange(added) % n, torch.arange(n, n + added)])
    return StackedRows(x, bottom), torch.cat([edges, extra, extra.flip(0)], dim=1)


@pytest.mark.parametrize("name", ["gcn", "sage", "mlp", "appnp", "gat", "sgc"])
def test_every_model_reads_stacked_rows_as_the_stacked_matrix(name: str) -> None:
    rows, edges = _rows()
    torch.manual_seed(0)
    model = build_model(name, FEATURES, CLASSES).eval()
    with torch.no_grad():
        blocks, stacked = model(rows, edges), model(rows.dense(), edges)
    assert blocks.shape == (rows.size(0), CLASSES)
    torch.testing.assert_close(blocks, stacked, rtol=1e-5, atol=1e-6)


def test_training_dropout_falls_on_the_graphs_own_rows_only() -> None:
    rows, _ = _rows()
    encoder = build_model("gcn", FEATURES, CLASSES, dropout=0.5).encoder
    torch.manual_seed(3)
    first = encoder.first_input(rows, training=True)
    torch.manual_seed(3)
    own = encoder.first_input(rows.top, training=True)
    assert isinstance(first, StackedRows)
    assert first.bottom is rows.bottom  # the added rows whole
    torch.testing.assert_close(first.top.csr.to_dense(), own.csr.to_dense())  # the own rows as any graph's
    dropped = first.top.csr.to_dense()
    kept = rows.top != 0
    assert bool((dropped[kept] == 0).any()) and bool((dropped[kept] == 2 * rows.top[kept]).any())
    # a layer watched by a hook reads tensors: the same draws, stacked dense
    encoder.layers[0].register_forward_hook(lambda *args: None)
    torch.manual_seed(3)
    watched = encoder.first_input(rows, training=True)
    assert isinstance(watched, torch.Tensor)
    torch.testing.assert_close(watched, torch.cat([dropped, rows.bottom]))


def test_the_mended_classifier_trains_on_the_blocks() -> None:
    x, edges = _graph()
    torch.manual_seed(0)
    generator = NeighGen(FEATURES, 16, max_pred=3).eval()
    with torch.no_grad():
        generator.degree_head.bias.fill_(2.0)  # about two generated neighbours a node
    mended_x, _ = mended_once(generator, weights_digest(generator), x, edges)
    assert isinstance(mended_x, StackedRows) and mended_x.top is x and mended_x.bottom.size(0) > x.size(0)
    model = MendedClassifier(build_model("gcn", FEATURES, CLASSES), generator)
    loss = model.train()(x, edges).logsumexp(dim=1).mean()
    loss.backward()
    grads = [p.grad for p in model.classifier.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert all(p.grad is None for p in model.generator.parameters())
