"""FedSage+'s cross-client term in parts (stamen.algorithms.fedsage.cross) is the direct implementation up to float
rounding: the same matches, loss and fGen gradients.

The direct implementations are kept here as oracles: generating every slot's row and ``torch.cdist`` to
every row of the other client (benchmarks/fedsage-schedule.md: 0.44 s a client pair on Cora), and the
used slots' rows with autograd through them (30 ms a pair).
"""

from __future__ import annotations

import torch

from stamen.algorithms.fedsage import messages as wire
from stamen.algorithms.fedsage.cross import (
    PARTS,
    ROW_VALUES,
    ROWS,
    complete_gradients,
    cross_parts,
    nearest_generated,
    request_gram,
)
from stamen.algorithms.fedsage.model import NeighGen, matching_loss

FEATURES, MAX_PRED, HIDDEN = 120, 5, 16


def _cdist_cross_loss(generated, slots, x_other):
    m, num_slots, features = generated.shape
    distances = torch.cdist(generated.reshape(m * num_slots, features), x_other).pow(2) / features
    nearest = distances.min(dim=1).values.view(m, num_slots)
    used = torch.arange(num_slots).unsqueeze(0) < slots.unsqueeze(1)
    per_node = torch.where(used, nearest, torch.zeros_like(nearest)).sum(dim=1) / slots.clamp(min=1)
    return per_node.mean()


def _cdist_cross_gradients(generator, head_input, slots, x_other):
    head = generator.feature_head
    head.train()
    head.zero_grad()
    loss = _cdist_cross_loss(generator.generate(head, head_input), slots, x_other)
    loss.backward()
    return float(loss.detach()), {name: param.grad.detach().clone() for name, param in head.named_parameters()}


def _bag_of_words(n: int, seed: int) -> torch.Tensor:
    """Sparse 0/1 rows like Cora's (about 5% non-zero here), each with at least one word."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, FEATURES, generator=g) < 0.05).float()
    x[torch.arange(n), torch.randint(0, FEATURES, (n,), generator=g)] = 1.0
    return x


def _generator_and_request(seed: int, nodes: int = 40, lowest_slot: int = 1):
    torch.manual_seed(seed)
    generator = NeighGen(FEATURES, hidden=HIDDEN, max_pred=MAX_PRED)
    g = torch.Generator().manual_seed(seed + 1)
    head_input = torch.randn(nodes, HIDDEN, generator=g)
    slots = torch.randint(lowest_slot, MAX_PRED + 1, (nodes,), generator=g)
    return generator, head_input, slots


def test_the_nearest_generated_row_is_cdists_nearest_on_sparse_and_dense_rows():
    g = torch.Generator().manual_seed(0)
    weight, bias = torch.randn(FEATURES, 32, generator=g) * 0.1, torch.randn(FEATURES, generator=g) * 0.1
    hidden = torch.randn(200, 32, generator=g)
    generated = hidden @ weight.t() + bias
    for rows in (_bag_of_words(150, 1), torch.randn(150, FEATURES, generator=g)):
        found = nearest_generated(rows @ weight, rows @ bias, rows.pow(2).sum(dim=1), hidden)
        assert torch.equal(found, torch.cdist(generated, rows).argmin(dim=1))


def _parts_gradients(generator, head_input, slots, x_other):
    head = generator.feature_head
    weights = {name: value.detach() for name, value in head.named_parameters()}
    loss, parts = cross_parts(head, weights, head_input, slots, x_other, request_gram(head, MAX_PRED))
    return loss, parts, complete_gradients(head, parts)


def test_the_parts_give_the_cdist_implementations_loss_and_gradients_on_sparse_and_dense_rows():
    for x_other, lowest_slot in ((_bag_of_words(90, 2), 1), (torch.randn(70, FEATURES), 0)):
        generator, head_input, slots = _generator_and_request(3, lowest_slot=lowest_slot)
        torch.manual_seed(5)  # the same dropout draws in both
        old_value, old_grads = _cdist_cross_gradients(generator, head_input, slots, x_other)
        torch.manual_seed(5)
        value, parts, grads = _parts_gradients(generator, head_input, slots, x_other)
        assert abs(value - old_value) <= 1e-4 * old_value
        assert grads.keys() == old_grads.keys()
        for name, grad in grads.items():
            scale = float(old_grads[name].abs().max())
            assert scale > 0, name
            assert float((grad - old_grads[name]).abs().max()) <= 1e-4 * scale, name
        assert set(PARTS) <= parts.keys()


def _sum(name, first, second):
    """The server's sum of two clients' parts: the sparse rows are concatenated, the rest added."""
    return torch.cat([first, second]) if name in (ROWS, ROW_VALUES) else first + second


def test_summed_parts_complete_to_the_summed_gradients():
    generator, head_input, slots = _generator_and_request(7)
    totals, summed = None, {}
    for seed in (11, 12, 13):  # three clients j, each its own features and dropout draws
        torch.manual_seed(seed)
        _, parts, grads = _parts_gradients(generator, head_input, slots, _bag_of_words(60, seed))
        totals = grads if totals is None else {k: totals[k] + grads[k] for k in grads}
        summed = {k: _sum(k, summed[k], v) if k in summed else v.clone() for k, v in parts.items()}
    completed = complete_gradients(generator.feature_head, summed)
    for name, total in totals.items():
        assert torch.allclose(completed[name], total, rtol=1e-4, atol=1e-7 * float(total.abs().max())), name


def test_no_used_slot_or_no_rows_gives_zero_gradients():
    generator, head_input, _ = _generator_and_request(9, nodes=4)
    head = generator.feature_head
    weights = {name: value.detach() for name, value in head.named_parameters()}
    no_slot, one_slot = torch.zeros(4, dtype=torch.long), torch.ones(4, dtype=torch.long)
    for slots, rows in ((no_slot, _bag_of_words(5, 1)), (one_slot, _bag_of_words(0, 1))):
        loss, parts = cross_parts(head, weights, head_input, slots, rows, request_gram(head, MAX_PRED))
        grads = complete_gradients(head, parts)
        assert parts[ROWS].numel() == 0
        assert loss == 0.0
        assert all(float(g.abs().max()) == 0.0 for g in grads.values())


def test_the_servers_concatenated_parts_are_the_sparse_rows():
    assert set(wire.FEDSAGE_CONCATENATED) == {ROWS, ROW_VALUES}


def _cdist_matching_loss(generated, targets, valid):
    """The local feature-matching loss over every slot (the earlier implementation)."""
    k = valid.sum(dim=1)
    distances = torch.cdist(generated, targets).pow(2) / generated.size(-1)
    nearest = distances.masked_fill(~valid.unsqueeze(1), float("inf")).min(dim=2).values
    slots = torch.arange(generated.size(1)).unsqueeze(0) < k.unsqueeze(1)
    per_node = torch.where(slots, nearest, torch.zeros_like(nearest)).sum(dim=1) / k.clamp(min=1)
    return per_node[k > 0].mean()


def test_the_local_loss_on_the_used_slots_is_the_loss_over_every_slot():
    generator, head_input, _ = _generator_and_request(21, nodes=30)
    g = torch.Generator().manual_seed(22)
    valid = torch.arange(MAX_PRED).unsqueeze(0) < torch.randint(0, MAX_PRED + 1, (30,), generator=g).unsqueeze(1)
    targets = torch.where(valid.unsqueeze(2), _bag_of_words(30 * MAX_PRED, 23).view(30, MAX_PRED, FEATURES), 0.0)
    losses, grads = [], []
    for used in (False, True):
        generator.zero_grad()
        torch.manual_seed(24)  # the same dropout draws in both
        if used:
            loss = matching_loss(*generator.generate_used(head_input, valid.sum(dim=1)), targets, valid)
        else:
            loss = _cdist_matching_loss(generator.generate(generator.feature_head, head_input), targets, valid)
        loss.backward()
        losses.append(float(loss.detach()))
        grads.append({name: param.grad.clone() for name, param in generator.feature_head.named_parameters()})
    assert abs(losses[1] - losses[0]) <= 1e-5 * losses[0]
    for name, old in grads[0].items():
        assert float((grads[1][name] - old).abs().max()) <= 1e-5 * float(old.abs().max()), name
