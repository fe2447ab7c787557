r"""FedSage+'s cross-client feature-matching loss for NeighGen, and its gradient computed where the data lives.

Zhang, Yang, Li, Sun and Yiu, *Subgraph Federated Learning with Missing Neighbor
Generation*, NeurIPS 2021. A client's missing neighbours mostly live in *other*
clients' subgraphs, so FedSage+ trains client :math:`i`'s generator (NeighGen,
:mod:`models.fedsage`) also to produce features that look like the nodes of every
other client :math:`j`, without client :math:`j`'s features ever leaving it. The
paper's feature loss for client :math:`i` is

.. math::
    \mathcal{L}^f_i = \frac{1}{|\bar V_i|} \sum_{v \in \bar V_i} \sum_{p} \Big(
      \min_{u \in N_{G_i}(v) \cap V^h_i} \lVert H^f_i(\mathbf{z}_v)_p - \mathbf{x}_u \rVert^2
      + \alpha \sum_{j \neq i} \min_{u \in V_j} \lVert H^f_i(\mathbf{z}_v)_p - \mathbf{x}^j_u \rVert^2 \Big).

**What is implemented.** Client :math:`i`'s step :math:`t` minimises
:math:`\lambda_d \mathcal{L}_d + \lambda_f \mathcal{L}_f + \alpha \sum_{j \neq i} \mathcal{L}^{i,j}_f`
(:math:`\mathcal{L}_d, \mathcal{L}_f`: the local terms of :mod:`models.fedsage`) with

.. math::
    \mathcal{L}^{i,j}_f(\boldsymbol{\theta}^f_i) = \frac{1}{|A_i|} \sum_{v \in A_i} \frac{1}{k_v}
      \sum_{p < k_v} \min_{u \in V_j} \lVert H^f(\mathbf{h}_v; \boldsymbol{\theta}^f_i)_p - \mathbf{x}^j_u \rVert^2 / F,

where :math:`\mathbf{h}_v = \mathbf{z}_v + \boldsymbol{\epsilon}_v` is fGen's input
(encoder output plus the step's noise), :math:`k_v = \min(n_v, P)` and
:math:`A_i = \{v : k_v > 0\}`: the same nodes, slots and normalisation as the local
:math:`\mathcal{L}_f`, with the nearest of *all* of client :math:`j`'s nodes
:math:`V_j` as target (:func:`cross_matching_loss`). :math:`\alpha` is
``fedsage-cross-weight``; :math:`\alpha = 0` is exactly local NeighGen. As in the paper's
protocol, client :math:`j` differentiates with respect to fGen's weights
:math:`\boldsymbol{\theta}^f_i` only (:func:`cross_gradients`): the encoder learns from
the local terms, and :math:`\mathbf{h}_v` is a constant of the step.

**Messages of one step** (two hops through the server; :mod:`client.fedsage_plus`,
:mod:`server.fedsage_plus`):

1. :math:`i \to` server: :math:`\{\mathbf{h}_v, k_v\}_{v \in A_i}` and
   :math:`\boldsymbol{\theta}^f_i` (no feature of any node);
2. server :math:`\to j`: every other client's triple;
3. :math:`j \to` server: :math:`\mathbf{g}_{i,j} = \nabla_{\boldsymbol{\theta}^f_i} \mathcal{L}^{i,j}_f`
   for each :math:`i \neq j`, computed on :math:`j`'s own features;
4. server :math:`\to i`: :math:`\mathbf{G}_i = \sum_{j \neq i} \mathbf{g}_{i,j}` (summed in
   partition order); :math:`i` takes one Adam step on
   :math:`\nabla(\lambda_d \mathcal{L}_d + \lambda_f \mathcal{L}_f) + \alpha \mathbf{G}_i`.

Client :math:`j`'s features leave it only inside :math:`\mathbf{g}_{i,j}`, a gradient
summed over :math:`A_i`'s slots, as in the paper. That is no formal privacy guarantee:
the last layer's bias gradient is a weighted sum of the matched features, which gives
a feature away when :math:`|A_i|` is one node with one slot.

An Adam step spans messages, so its moments wait in the client's state between them
(:func:`models.training.adam_state_record`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn


def cross_matching_loss(generated: Tensor, slots: Tensor, x_other: Tensor) -> Tensor:
    r""":math:`\mathcal{L}^{i,j}_f` (module docstring): ``generated`` ``(m, P, F)``, ``slots`` ``(m,)`` = :math:`k_v`.

    Each slot :math:`p < k_v` is matched to its nearest row of ``x_other`` ``(n_j, F)``.
    """
    if generated.size(0) == 0 or x_other.size(0) == 0:
        return generated.sum() * 0.0
    m, num_slots, features = generated.shape
    distances = torch.cdist(generated.reshape(m * num_slots, features), x_other).pow(2) / features
    nearest = distances.min(dim=1).values.view(m, num_slots)
    used = torch.arange(num_slots, device=generated.device).unsqueeze(0) < slots.unsqueeze(1)
    per_node = torch.where(used, nearest, torch.zeros_like(nearest)).sum(dim=1) / slots.clamp(min=1)
    return per_node.mean()


def cross_gradients(
    head: nn.Module, generate: Callable[[nn.Module, Tensor], Tensor], head_input: Tensor, slots: Tensor, x_other: Tensor
) -> tuple[float, dict[str, Tensor]]:
    r"""Client :math:`j`'s answer: :math:`\mathcal{L}^{i,j}_f` and its gradient w.r.t. ``head``'s weights.

    Args:
        head: client :math:`i`'s fGen (its weights loaded), in training mode (dropout as in training).
        generate: ``(head, head_input) -> (m, P, F)`` features (:meth:`models.fedsage.NeighGen.generate`).
        head_input: :math:`\mathbf{h}_v` ``(m, hidden)``; slots: :math:`k_v` ``(m,)``.
        x_other: client :math:`j`'s node features ``(n_j, F)``.

    Returns:
        The loss and ``{parameter name: gradient}`` (zeros where no node has a slot).
    """
    head.train()
    head.zero_grad()
    loss = cross_matching_loss(generate(head, head_input), slots, x_other)
    loss.backward()
    gradients = {
        name: (param.grad.detach().clone() if param.grad is not None else torch.zeros_like(param))
        for name, param in head.named_parameters()
    }
    return float(loss.detach()), gradients
