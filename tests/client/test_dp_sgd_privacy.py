"""DP-SGD's noise observed: every coordinate of a step carries N(0, (sigma C / (q N))^2), scaled by the optimizer.

DP-SGD (:mod:`stamen.models.dp_sgd`, Opacus's convention) sums the clipped per-sample gradients of a
Poisson batch, adds :math:`\\mathcal{N}(0, \\sigma^2 C^2)` per coordinate and divides by the *expected* batch
:math:`qN`; SGD then moves the weights by ``-lr`` times that. With the model, the data and
the batches fixed and only the noise seed varying, the deviations from the noiseless step
are Gaussian with standard deviation :math:`\\mathrm{lr}\\,\\sigma C / (qN)`. The check is a
chi-square test of their variance, :math:`S = \\sum_j d_j^2 / s^2 \\sim \\chi^2_n`, two-sided at a
false-alarm rate of ``ALPHA`` = 1e-6. The broken variants below (noise left out of the
optimizer, clipping skipped) must be rejected by the same check.
"""

import pytest
import torch
from opacus.accountants import RDPAccountant
from scipy import stats
from torch_geometric.data import Data

from stamen.client.privacy import RowClassifier, propagated_rows, train_private
from stamen.contract.run_config import RunConfig
from stamen.models import build_model, dp_sgd

ALPHA = 1e-6
SIGMA, CLIP, LR = 1.0, 0.5, 1.0
TRAIN = 40


def _graph() -> Data:
    """60 nodes, 40 of them training nodes, features scaled so per-sample gradients are far above the clip norm."""
    generator = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (60,), generator=generator)
    x = 100 * (torch.randn(60, 8, generator=generator) + y[:, None].float())
    edge_index = torch.randint(0, 60, (2, 240), generator=generator)
    train_mask = torch.zeros(60, dtype=torch.bool)
    train_mask[:TRAIN] = True
    return Data(x=x, edge_index=edge_index, y=y, train_mask=train_mask, num_classes=3)


def _config(batch: int) -> RunConfig:
    return RunConfig.from_flower(
        {
            "privacy": "dp-sgd",
            "model": "mlp",
            "dropout": 0.0,
            "local-epochs": 1,
            "dp-batch-size": batch,
            "noise-multiplier": SIGMA,
            "max-grad-norm": CLIP,
        }
    )


def _model():
    torch.manual_seed(0)
    return build_model("mlp", 8, 3, hidden=16, num_layers=2, dropout=0.0)


def _flat(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def chi_square_accepts(deviations: torch.Tensor, std: float, dof: int) -> tuple[bool, float]:
    """Two-sided chi-square test of ``sum (d / std)^2 ~ chi^2_dof``: (accepted, S / dof)."""
    statistic = float(((deviations.double() / std) ** 2).sum())
    low, high = stats.chi2.ppf(ALPHA / 2, dof), stats.chi2.isf(ALPHA / 2, dof)
    return bool(low <= statistic <= high), statistic / dof


def noiseless_step(model, data: Data) -> torch.Tensor:
    """-lr times the mean of the per-sample gradients, each clipped to CLIP (computed here, not by Opacus)."""
    rows = propagated_rows(model, data)[data.train_mask]
    labels = data.y[data.train_mask]
    total = torch.zeros_like(_flat(model))
    for i in range(len(labels)):
        loss = torch.nn.functional.cross_entropy(RowClassifier(model)(rows[i : i + 1]), labels[i : i + 1])
        gradient = torch.cat([g.flatten() for g in torch.autograd.grad(loss, list(model.parameters()))])
        total += gradient * min(1.0, CLIP / (float(gradient.norm()) + 1e-6))
    return -LR * total / len(labels)


def full_batch_check(repeats: int = 60) -> tuple[bool, float]:
    """Rate q = 1 (every node in every batch, one step): deviations from the independent noiseless step."""
    data, config = _graph(), _config(TRAIN)
    expected = noiseless_step(_model(), data)
    deviations = []
    for repeat in range(repeats):
        model = _model()
        before = _flat(model)
        torch.manual_seed(1_000 + repeat)  # the noise comes from torch's global generator
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        train_private(model, data, config, optimizer, RDPAccountant(), torch.Generator().manual_seed(0))
        deviations.append(_flat(model) - before - expected)
    deviations = torch.stack(deviations)
    return chi_square_accepts(deviations, LR * SIGMA * CLIP / TRAIN, deviations.numel())


class Recording(torch.optim.SGD):
    """SGD with lr = 0 keeping every gradient it is handed: the model stays put, every step sees the same model."""

    def __init__(self, params) -> None:
        super().__init__(params, lr=0.0)
        self.seen: list[torch.Tensor] = []

    def step(self, closure=None):
        params = [p for group in self.param_groups for p in group["params"]]
        self.seen.append(torch.cat([p.grad.detach().flatten().clone() for p in params]))
        return super().step(closure)


def poisson_batch_check(repeats: int = 40) -> tuple[bool, float]:
    """Rate q = 1/4 (expected batch 10): each step's gradient, over noise seeds with the batches fixed,
    varies around its mean with sigma C / (q N); tested on the sample variance ((repeats - 1) per coordinate)."""
    data, config = _graph(), _config(10)
    seen = []
    for repeat in range(repeats):
        model = _model()
        optimizer = Recording(model.parameters())
        torch.manual_seed(2_000 + repeat)
        train_private(model, data, config, optimizer, RDPAccountant(), torch.Generator().manual_seed(5))
        seen.append(torch.stack(optimizer.seen))
    seen = torch.stack(seen)  # repeats x steps x coordinates
    assert seen.shape[1] == 4  # steps per epoch = 1 / q
    deviations = seen - seen.mean(dim=0, keepdim=True)
    return chi_square_accepts(deviations, SIGMA * CLIP / 10, (repeats - 1) * seen[0].numel())


def test_full_batch_step_is_the_clipped_mean_plus_calibrated_noise():
    accepted, ratio = full_batch_check()
    assert accepted, f"variance ratio S/n = {ratio:.4f}"


def test_poisson_batch_noise_is_calibrated_to_the_expected_batch():
    accepted, ratio = poisson_batch_check()
    assert accepted, f"variance ratio S/n = {ratio:.4f}"


# Broken variants: the checks above must reject them ------------------------------------------------


def _noise_not_in_the_optimizer(monkeypatch):
    """sigma reaches train_private's report and accountant, but the gradients handed to the optimizer carry no noise."""
    monkeypatch.setattr(dp_sgd, "gaussian_noise", lambda reference, std: torch.zeros_like(reference))


def _clipping_skipped(monkeypatch):
    """Every per-sample gradient enters the sum as it is."""
    monkeypatch.setattr(dp_sgd, "clip_factors", lambda norms, max_grad_norm: torch.ones_like(norms))


@pytest.mark.parametrize("check", [full_batch_check, poisson_batch_check])
def test_the_checks_reject_an_optimizer_without_noise(check, monkeypatch):
    _noise_not_in_the_optimizer(monkeypatch)
    accepted, ratio = check()
    assert not accepted and ratio < 0.01


def test_the_full_batch_check_rejects_skipped_clipping(monkeypatch):
    _clipping_skipped(monkeypatch)
    accepted, ratio = full_batch_check()
    assert not accepted and ratio > 2
