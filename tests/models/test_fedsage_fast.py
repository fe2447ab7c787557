"""FedSage+'s cross-client term, computed on the used slots with a sparse nearest-row search, is the earlier
``torch.cdist`` implementation up to float rounding: the same matches, loss and fGen gradients.

The earlier implementation is kept here as the oracle (benchmarks/fedsage-schedule.md: it cost
0.44 s a client pair on Cora).
"""

from __future__ import annotations

import torch

from models.fedsage import NeighGen, cross_gradients, cross_matching_loss, nearest_rows

FEATURES, MAX_PRED = 120, 5


def _old_cross_matching_loss(generated, slots, x_other):
    m, num_slots, features = generated.shape
    distances = torch.cdist(generated.reshape(m * num_slots, features), x_other).pow(2) / features
    nearest = distances.min(dim=1).values.view(m, num_slots)
    used = torch.arange(num_slots).unsqueeze(0) < slots.unsqueeze(1)
    per_node = torch.where(used, nearest, torch.zeros_like(nearest)).sum(dim=1) / slots.clamp(min=1)
    return per_node.mean()


def _old_cross_gradients(head, generate, head_input, slots, x_other):
    head.train()
    head.zero_grad()
    loss = _old_cross_matching_loss(generate(head, head_input), slots, x_other)
    loss.backward()
    return float(loss.detach()), {name: param.grad.detach().clone() for name, param in head.named_parameters()}


def _bag_of_words(n: int, seed: int) -> torch.Tensor:
    """Sparse 0/1 rows like Cora's (about 5% non-zero here), each with at least one word."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, FEATURES, generator=g) < 0.05).float()
    x[torch.arange(n), torch.randint(0, FEATURES, (n,), generator=g)] = 1.0
    return x


def test_nearest_rows_is_cdists_nearest_on_sparse_and_dense_rows():
    g = torch.Generator().manual_seed(0)
    queries = torch.randn(200, FEATURES, generator=g) * 0.3
    for rows in (_bag_of_words(150, 1), torch.randn(150, FEATURES, generator=g)):  # sparse, then dense product
        assert torch.equal(nearest_rows(queries, rows), torch.cdist(queries, rows).argmin(dim=1))


def test_cross_loss_and_gradients_are_the_cdist_implementations():
    x_other = _bag_of_words(90, 2)
    torch.manual_seed(3)
    generator = NeighGen(FEATURES, hidden=16, max_pred=MAX_PRED)
    g = torch.Generator().manual_seed(4)
    head_input = torch.randn(40, 16, generator=g)
    slots = torch.randint(1, MAX_PRED + 1, (40,), generator=g)
    generated = generator.generate(generator.feature_head, head_input).detach()
    old_loss = _old_cross_matching_loss(generated, slots, x_other)
    assert torch.allclose(cross_matching_loss(generated, slots, x_other), old_loss, rtol=1e-5, atol=0)

    torch.manual_seed(5)  # the same dropout draws in both
    old_value, old_grads = _old_cross_gradients(generator.feature_head, generator.generate, head_input, slots, x_other)
    torch.manual_seed(5)
    value, grads = cross_gradients(generator.feature_head, generator.generate_used, head_input, slots, x_other)
    assert abs(value - old_value) <= 1e-5 * old_value
    assert grads.keys() == old_grads.keys()
    for name, grad in grads.items():
        scale = float(old_grads[name].abs().max())
        assert scale > 0, name
        assert float((grad - old_grads[name]).abs().max()) <= 1e-5 * scale, name
