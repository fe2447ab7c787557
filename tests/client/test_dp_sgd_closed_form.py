"""DP-SGD in closed form (stamen/models/dp_sgd.py) against Opacus, the reference it replaces.

Per-sample gradients equal Opacus's ``grad_sample``, one noiseless clipped step equals
its ``DPOptimizer`` step, and a whole round of :func:`stamen.client.privacy.train_private`
(Poisson batches, empty ones included, dropout, noise) equals the same round through
Opacus, with the same accountant history and epsilon.
"""

import pytest
import torch
from flwr.app import RecordDict
from opacus import GradSampleModule
from opacus.accountants import RDPAccountant
from opacus.optimizers import DPOptimizer
from torch import nn
from torch_geometric.data import Data

from stamen.benches.dpsgd import opacus_on_rows
from stamen.client.privacy import (
    RowClassifier,
    load_accountant,
    propagated_rows,
    sample_rate,
    spent_epsilon,
    train_private,
)
from stamen.contract.run_config import RunConfig
from stamen.models import build_model
from stamen.models.dp_sgd import (
    DpSgdSettings,
    LinearTape,
    clip_factors,
    expected_batch_size,
    output_gradients,
    per_sample_gradients,
    per_sample_norms,
    poisson_epoch,
    private_step,
    trainable,
)

CASES = [("sgc", True), ("sgc", False), ("mlp", True), ("mlp", False)]


def _graph(num_nodes: int = 60, train: int = 40, scale: float = 3.0) -> Data:
    generator = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (num_nodes,), generator=generator)
    x = scale * (torch.randn(num_nodes, 8, generator=generator) + y[:, None].float())
    edge_index = torch.randint(0, num_nodes, (2, 4 * num_nodes), generator=generator)
    train_mask = torch.zeros(num_nodes, dtype=torch.bool)
    train_mask[:train] = True
    return Data(x=x, edge_index=edge_index, y=y, train_mask=train_mask, num_classes=3)


def _without_bias(module: nn.Module) -> None:
    """Replace every linear layer of ``module`` by one with the same weight and no bias."""
    for name, child in module.named_children():
        if isinstance(child, nn.Linear):
            plain = nn.Linear(child.in_features, child.out_features, bias=False)
            plain.weight.data.copy_(child.weight.data)
            setattr(module, name, plain)
        else:
            _without_bias(child)


def _model(name: str, bias: bool, dropout: float = 0.0, dtype: torch.dtype = torch.float32):
    torch.manual_seed(0)
    model = build_model(name, 8, 3, hidden=16, num_layers=2, dropout=dropout)
    if not bias:
        _without_bias(model)
    return model.to(dtype)


def _batch(model, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """12 propagated rows (the propagation has no parameters) and their labels."""
    data = _graph()
    return propagated_rows(model, data)[:12].to(dtype), data.y[:12]


def _flat(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


@pytest.mark.parametrize(("name", "bias"), CASES)
@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_per_sample_gradients_equal_opacus_grad_sample(name, bias, dropout):
    model = _model(name, bias, dropout, torch.float64)
    rows, labels = _batch(model, torch.float64)
    reference = GradSampleModule(RowClassifier(model)).train()
    torch.manual_seed(3)  # the same dropout masks in both forward passes
    nn.functional.cross_entropy(reference(rows), labels).backward()
    expected = {p: p.grad_sample.detach().clone() for p in model.parameters()}
    reference.to_standard_module()  # the hooks and grad samples go; the module is plain again
    assert len(expected) == (2 if name == "sgc" else 4) - (0 if bias else (1 if name == "sgc" else 2))

    module = RowClassifier(model).train()
    with LinearTape(module) as tape:
        torch.manual_seed(3)
        logits, calls = tape.forward(rows)
        grads = output_gradients(calls, nn.functional.cross_entropy(logits, labels, reduction="sum"))
    ours = per_sample_gradients(calls, grads)
    assert set(map(id, ours)) == set(map(id, expected))
    for p, grad_sample in expected.items():
        assert grad_sample.shape == ours[p].shape
        assert torch.allclose(ours[p], grad_sample, rtol=1e-6, atol=1e-6)
    stacked = torch.cat([g.reshape(len(labels), -1) for g in ours.values()], dim=1)
    norms = per_sample_norms(calls, grads, list(model.parameters()))
    assert torch.allclose(norms, stacked.norm(dim=1), rtol=1e-6, atol=1e-6)
    assert not any(m._forward_hooks for m in model.modules())


@pytest.mark.parametrize(("name", "bias"), CASES)
def test_one_noiseless_clipped_step_equals_opacus_step(name, bias):
    clip = 2.0  # some samples are clipped, some are not
    rows, labels = _batch(_model(name, bias))

    reference_model = _model(name, bias)
    module = GradSampleModule(RowClassifier(reference_model))
    optimizer = DPOptimizer(
        torch.optim.SGD(reference_model.parameters(), lr=1.0),
        noise_multiplier=0.0,
        max_grad_norm=clip,
        expected_batch_size=10,
    )
    nn.functional.cross_entropy(module(rows), labels).backward()
    raw_norms = torch.stack([p.grad_sample.reshape(len(labels), -1).norm(dim=1) for p in optimizer.params]).norm(dim=0)
    assert raw_norms.max() > 2 * clip and raw_norms.min() < clip
    optimizer.step()
    module.to_standard_module()

    model = _model(name, bias)
    before = _flat(model)
    with LinearTape(RowClassifier(model)) as tape:
        sgd = torch.optim.SGD(model.parameters(), lr=1.0)
        private_step(tape, sgd, rows, labels, DpSgdSettings(0.0, clip, 10))
    assert torch.allclose(_flat(model), _flat(reference_model), rtol=1e-6, atol=1e-6)
    moved = (_flat(model) - before).norm()
    assert 0 < moved <= clip * len(labels) / 10 * 1.001  # each clipped sample moves at most C / expected batch


def test_expected_batch_is_the_exact_floor_of_n_q():
    """Opacus's int(N q) in floating point gives 0 for N = 49, q = 1/49 (a division by zero) and 7 for 392, 1/49."""
    cases = {(49, 1): 1, (392, 8): 8, (40, 10): 10, (162, 32): 27}
    assert {(n, b): expected_batch_size(n, sample_rate(n, b)) for n, b in cases} == cases


def test_where_opacus_divides_by_zero_the_round_stays_finite():
    """49 training nodes at dp-batch-size 1: Opacus's divisor int(49 * (1/49)) is 0, its parameters go inf/NaN."""
    data = _graph(train=49)
    config = RunConfig.from_flower(
        {"privacy": "dp-sgd", "model": "sgc", "dp-batch-size": 1, "local-epochs": 1, "noise-multiplier": 1.0}
    )
    flat = _round("closed form", "sgc", data, config, 0)[0]
    assert torch.isfinite(flat).all() and not torch.equal(flat, _flat(_model("sgc", True)))


def test_clip_factors_follow_opacus_formula():
    norms = torch.tensor([0.0, 0.5, 1.0, 4.0])
    assert torch.equal(clip_factors(norms, 1.0), (1.0 / (norms + 1e-6)).clamp(max=1.0))


def _round(impl: str, name: str, data: Data, config: RunConfig, seed: int):
    model = _model(name, True, config.dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    accountant = load_accountant(RecordDict())
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(100 + seed)  # dropout and noise
    if impl == "closed form":
        result = train_private(model, data, config, optimizer, accountant, generator)
        losses, steps = result.loss, result.steps
    else:
        done = opacus_on_rows(model, optimizer, data, config, generator, accountant)
        losses, steps = sum(done.losses) / max(len(done.losses), 1), done.steps
    return _flat(model), losses, steps, list(accountant.history), accountant


@pytest.mark.parametrize("name", ["sgc", "mlp"])
@pytest.mark.parametrize(("train", "batch", "dropout"), [(40, 10, 0.5), (6, 1, 0.5)])
def test_a_round_equals_the_same_round_through_opacus(name, train, batch, dropout):
    """Same batches (from the same generator), dropout masks and noise (global generator): same model."""
    data = _graph(train=train)
    config = RunConfig.from_flower(
        {
            "privacy": "dp-sgd",
            "model": name,
            "dropout": dropout,
            "dp-batch-size": batch,
            "local-epochs": 3,
            "noise-multiplier": 0.8,
            "max-grad-norm": 0.5,
        }
    )
    rate = sample_rate(train, batch)
    generator = torch.Generator().manual_seed(4)
    sizes = [len(index) for _ in range(config.local_epochs) for index in poisson_epoch(train, rate, generator)]
    if train == 6:
        assert 0 in sizes  # the small case meets empty Poisson batches: steps of noise alone
    ours = _round("closed form", name, data, config, 4)
    reference = _round("opacus", name, data, config, 4)
    assert ours[2] == reference[2] == len(sizes)
    assert torch.allclose(ours[0], reference[0], rtol=1e-5, atol=1e-6)
    assert ours[1] == pytest.approx(reference[1], rel=1e-6)
    assert ours[3] == reference[3] == [(0.8, rate, len(sizes))]
    assert spent_epsilon(ours[4], config.target_delta) == reference[4].get_epsilon(config.target_delta)


def test_a_round_is_the_same_every_time():
    data = _graph()
    config = RunConfig.from_flower({"privacy": "dp-sgd", "model": "mlp", "dp-batch-size": 10, "local-epochs": 2})
    first, second = _round("closed form", "mlp", data, config, 1), _round("closed form", "mlp", data, config, 1)
    assert torch.equal(first[0], second[0]) and first[1] == second[1]
    assert not torch.equal(first[0], _round("closed form", "mlp", data, config, 2)[0])


def test_spent_epsilon_equals_the_accountant():
    accountant = RDPAccountant()
    assert spent_epsilon(accountant, 1e-5) == 0.0
    accountant.history = [(1.1, 0.25, 8), (0.9, 0.1, 30), (1.1, 0.25, 4)]
    for delta in (1e-5, 1e-3):
        assert spent_epsilon(accountant, delta) == accountant.get_epsilon(delta)


def test_a_parameter_outside_the_linear_layers_is_refused():
    model = _model("mlp", True)
    extra = nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.SGD([*model.parameters(), extra], lr=0.1)
    rows, labels = _batch(model)
    with LinearTape(RowClassifier(model)) as tape, pytest.raises(ValueError, match="trains linear layers only"):
        private_step(tape, optimizer, rows, labels, DpSgdSettings(1.0, 1.0, 10))
    assert trainable(optimizer)[-1] is extra
    assert not any(m._forward_hooks for m in model.modules())
