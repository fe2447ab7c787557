r"""DP-SGD steps for networks of linear layers, per-sample gradients in closed form.

For a linear layer :math:`\mathbf{y} = \mathbf{W}\mathbf{x} + \mathbf{b}` that sees sample
:math:`i`'s input :math:`\mathbf{x}_i` once, the gradient of that sample's loss
:math:`\ell_i` is

.. math::

    \nabla_{\mathbf{W}} \ell_i = \mathbf{g}_i \mathbf{x}_i^\top,\qquad
    \nabla_{\mathbf{b}} \ell_i = \mathbf{g}_i,\qquad
    \mathbf{g}_i = \partial \ell_i / \partial \mathbf{y}_i,

and :math:`\mathbf{g}_i` is row :math:`i` of :math:`\partial (\sum_j \ell_j) / \partial \mathbf{Y}`
(sample :math:`j`'s loss does not depend on row :math:`i`). So one backward pass to each
layer's output gives every per-sample gradient, and their norms without forming them:

.. math::

    \|\nabla_\theta \ell_i\|^2
    = \sum_{\text{layers}} \|\mathbf{g}_i\|^2 \left(\|\mathbf{x}_i\|^2 + [\text{bias}]\right).

A DP-SGD step (Abadi et al., 2016, as Opacus does it) clips sample :math:`i` by
:math:`c_i = \min(1, C / (\|\nabla_\theta \ell_i\| + 10^{-6}))`, sums, adds
:math:`\mathcal{N}(0, \sigma^2 C^2)` to every coordinate and divides by the expected batch
:math:`\lfloor qN \rfloor`; the clipped sum of a layer is again one product,
:math:`\sum_i c_i \mathbf{g}_i \mathbf{x}_i^\top = (\mathbf{c} \odot \mathbf{G})^\top \mathbf{X}`.
An empty Poisson batch steps with the noise alone. Batches are Poisson samples: every
step keeps each of the :math:`N` samples with probability :math:`q`, drawn as Opacus's
sampler draws them (``torch.rand(N) < q`` from the caller's generator, ``int(1/q)``
steps an epoch), so the same generator gives the same batches as Opacus's loader. The noise is
drawn from torch's global generator, one ``torch.normal`` per parameter in the
optimizer's order, as Opacus draws it (the ClientApp seeds it on every call).

:mod:`stamen.models.dp_sgd_opacus` runs the same steps through Opacus; tests hold the two equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

NORM_EPSILON = 1e-6  # Opacus's guard in C / (norm + eps)


@dataclass(frozen=True)
class DpSgdSettings:
    """The noise multiplier sigma, the clip norm C, and the expected batch that divides the noisy sum."""

    noise_multiplier: float
    max_grad_norm: float
    expected_batch_size: int


def expected_batch_size(num_samples: int, rate: float) -> int:
    """The divisor of the noisy sum: ``floor(N q)``, Opacus's convention.

    Opacus computes ``int(N * q)`` in floating point, where ``49 * (1 / 49)`` is
    ``0.999...``: it would divide by 0 there (and by 7 for ``392 * (1 / 49)``). The
    tolerance keeps the exact floor.
    """
    return math.floor(num_samples * rate + 1e-9)


def poisson_epoch(num_samples: int, rate: float, generator: torch.Generator) -> Iterator[Tensor]:
    """One epoch of Poisson batches: ``int(1 / rate)`` index tensors, each sample kept with probability ``rate``.

    The epoch first draws one integer, as torch's ``DataLoader`` does for its workers' seed
    when Opacus's loader starts an epoch, so the same generator gives Opacus's batches.
    """
    torch.empty((), dtype=torch.int64).random_(generator=generator)
    for _ in range(int(1 / rate)):
        yield (torch.rand(num_samples, generator=generator) < rate).nonzero().reshape(-1)


@dataclass(frozen=True)
class LinearCall:
    """One call of a linear layer in a forward pass: its input rows and its output rows."""

    layer: nn.Linear
    inputs: Tensor
    outputs: Tensor


class LinearTape:
    """Records every ``nn.Linear`` call of ``module``'s forward passes while the tape is open.

    ``with LinearTape(module) as tape:`` adds a forward hook to each linear layer and
    removes them all on exit, so the module is a plain module again afterwards.
    """

    def __init__(self, module: nn.Module) -> None:
        self.module = module
        self.calls: list[LinearCall] = []
        self._handles: list[RemovableHandle] = []

    def __enter__(self) -> LinearTape:
        for layer in self.module.modules():
            if isinstance(layer, nn.Linear):
                self._handles.append(layer.register_forward_hook(self._record))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self.calls.clear()

    def _record(self, layer: nn.Module, inputs: tuple[Tensor, ...], outputs: Tensor) -> None:
        assert isinstance(layer, nn.Linear)
        self.calls.append(LinearCall(layer, inputs[0], outputs))

    def forward(self, rows: Tensor) -> tuple[Tensor, list[LinearCall]]:
        """``module(rows)`` and the linear calls it made."""
        self.calls.clear()
        logits = self.module(rows)
        calls, self.calls = self.calls, []
        layers = [call.layer for call in calls]
        if len(set(map(id, layers))) != len(layers):
            raise ValueError("DP-SGD in closed form needs each linear layer used once per forward pass")
        if any(call.inputs.dim() != 2 for call in calls):
            raise ValueError("DP-SGD in closed form needs 2-D inputs (one row per sample) to every linear layer")
        return logits, calls


def trainable(optimizer: torch.optim.Optimizer) -> list[nn.Parameter]:
    """The optimizer's parameters that require gradients, in its order (the order the noise is drawn in)."""
    return [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]


def _check_covered(calls: list[LinearCall], params: list[nn.Parameter]) -> None:
    covered = {id(p) for call in calls for p in (call.layer.weight, call.layer.bias) if p is not None}
    if any(id(p) not in covered for p in params):
        raise ValueError(
            "DP-SGD in closed form trains linear layers only: the optimizer holds a parameter "
            "that no linear layer of the forward pass used"
        )


def output_gradients(calls: list[LinearCall], loss: Tensor) -> list[Tensor]:
    r"""Rows :math:`\mathbf{g}_i` of :math:`\partial \mathcal{L} / \partial \mathbf{Y}` per call (``loss``: a sum)."""
    return list(torch.autograd.grad(loss, [call.outputs for call in calls]))


def per_sample_gradients(calls: list[LinearCall], grads: list[Tensor]) -> dict[nn.Parameter, Tensor]:
    r"""Each parameter's per-sample gradients, formed: :math:`\mathbf{g}_i\mathbf{x}_i^\top`, :math:`\mathbf{g}_i`."""
    out: dict[nn.Parameter, Tensor] = {}
    for call, g in zip(calls, grads, strict=True):
        out[call.layer.weight] = torch.einsum("bo,bi->boi", g, call.inputs)
        if call.layer.bias is not None:
            out[call.layer.bias] = g
    return out


def per_sample_norms(calls: list[LinearCall], grads: list[Tensor], params: list[nn.Parameter]) -> Tensor:
    """Norm of each sample's gradient over ``params``, without forming the gradients."""
    wanted = {id(p) for p in params}
    squared = torch.zeros(grads[0].shape[0], dtype=grads[0].dtype, device=grads[0].device)
    for call, g in zip(calls, grads, strict=True):
        weight = id(call.layer.weight) in wanted
        bias = call.layer.bias is not None and id(call.layer.bias) in wanted
        if weight or bias:
            inputs = call.inputs.square().sum(dim=1) if weight else torch.zeros_like(squared)
            squared = squared + g.square().sum(dim=1) * (inputs + float(bias))
    return squared.sqrt()


def clipped_sums(
    calls: list[LinearCall], grads: list[Tensor], factors: Tensor, params: list[nn.Parameter]
) -> dict[nn.Parameter, Tensor]:
    r""":math:`\sum_i c_i \nabla \ell_i` for each of ``params``.

    Weights: :math:`(\mathbf{c}\odot\mathbf{G})^\top\mathbf{X}`; biases: :math:`\mathbf{G}^\top\mathbf{c}`.
    """
    wanted = {id(p) for p in params}
    sums: dict[nn.Parameter, Tensor] = {}
    for call, g in zip(calls, grads, strict=True):
        scaled = g * factors[:, None]
        if id(call.layer.weight) in wanted:
            sums[call.layer.weight] = scaled.t() @ call.inputs
        if call.layer.bias is not None and id(call.layer.bias) in wanted:
            sums[call.layer.bias] = scaled.sum(dim=0)
    return sums


def clip_factors(norms: Tensor, max_grad_norm: float) -> Tensor:
    """``min(1, C / (norm + 1e-6))`` per sample."""
    return (max_grad_norm / (norms + NORM_EPSILON)).clamp(max=1.0)


def gaussian_noise(reference: Tensor, std: float) -> Tensor:
    """N(0, std^2) per coordinate of ``reference``'s shape, from torch's global generator (zeros if std = 0)."""
    if std == 0:
        return torch.zeros_like(reference)
    return torch.normal(mean=0.0, std=std, size=reference.shape, device=reference.device, dtype=reference.dtype)


def private_step(
    tape: LinearTape,
    optimizer: torch.optim.Optimizer,
    rows: Tensor,
    labels: Tensor,
    settings: DpSgdSettings,
) -> float | None:
    """One DP-SGD step on the batch ``(rows, labels)``; its mean cross-entropy, or None for an empty batch.

    Every trainable parameter of ``optimizer`` gets ``grad = (clipped sum + noise) / expected batch``
    and the optimizer steps.
    """
    params = trainable(optimizer)
    sums: dict[nn.Parameter, Tensor] = {}
    loss: float | None = None
    if len(labels) > 0:
        logits, calls = tape.forward(rows)
        _check_covered(calls, params)
        total = nn.functional.cross_entropy(logits, labels, reduction="sum")
        grads = output_gradients(calls, total)
        factors = clip_factors(per_sample_norms(calls, grads, params), settings.max_grad_norm)
        sums = clipped_sums(calls, grads, factors, params)
        loss = float(total.detach()) / len(labels)
    std = settings.noise_multiplier * settings.max_grad_norm
    with torch.no_grad():
        for p in params:
            summed = sums.get(p)
            summed = torch.zeros_like(p) if summed is None else summed.detach()
            p.grad = (summed + gaussian_noise(summed, std)) / settings.expected_batch_size
    optimizer.step()
    return loss
