"""DP-SGD through Opacus on a per-row network: the reference that :mod:`stamen.models.dp_sgd` must equal.

Opacus wraps the module in hooks that store every parameter's per-sample gradient
(``p.grad_sample``), and the optimizer in a ``DPOptimizer`` that clips, sums, adds
noise and divides by the expected batch; its data loader draws Poisson batches.
Stamen trains with :mod:`stamen.models.dp_sgd` (the same step in closed form, several times
faster on these small networks); this module is kept so that tests can prove both
give the same gradients, steps and privacy accounting, and ``stamen bench dpsgd``
can time both. They differ only where Opacus's floating-point divisor ``int(N q)``
falls below ``floor(N q)`` (:func:`stamen.models.dp_sgd.expected_batch_size`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset

from stamen.models.opacus_quiet import opacus_quietly

if TYPE_CHECKING:
    from opacus.accountants import RDPAccountant


@dataclass(frozen=True)
class OpacusRound:
    """The losses of the non-empty batches and the number of steps (empty batches included)."""

    losses: list[float]
    steps: int


def opacus_round(
    module: nn.Module,
    optimizer: torch.optim.Optimizer,
    rows: Tensor,
    labels: Tensor,
    noise_multiplier: float,
    max_grad_norm: float,
    batch_size: int,
    epochs: int,
    generator: torch.Generator,
    accountant: RDPAccountant,
) -> OpacusRound:
    """``epochs`` epochs of Opacus's DP-SGD over ``(rows, labels)``; ``accountant`` gains the steps.

    Batches are Poisson samples at rate ``1 / ceil(len(rows) / batch_size)`` drawn from
    ``generator``; the noise comes from torch's global generator. On return the hooks
    are gone and no parameter keeps a ``grad_sample``.
    """
    with opacus_quietly():
        # on use: opacus stays out of this module's import
        from opacus import PrivacyEngine
    engine = PrivacyEngine(accountant="rdp")
    engine.accountant = accountant
    loader = DataLoader(TensorDataset(rows, labels), batch_size=batch_size, generator=generator)
    private_module, private_optimizer, private_loader = engine.make_private(
        module=module,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=noise_multiplier,
        max_grad_norm=max_grad_norm,
        poisson_sampling=True,
    )
    private_module.train()
    losses, steps = [], 0
    for _ in range(epochs):
        for batch_rows, batch_labels in private_loader:
            private_optimizer.zero_grad()
            loss = nn.functional.cross_entropy(private_module(batch_rows), batch_labels)
            loss.backward()
            private_optimizer.step()  # an empty batch still steps: noise only, and it is accounted
            steps += 1
            if len(batch_labels) > 0:
                losses.append(float(loss.detach()))
    private_module.to_standard_module()  # removes the hooks and the per-sample gradients
    return OpacusRound(losses=losses, steps=steps)
