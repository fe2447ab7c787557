r"""FedSage+'s cross-client term :math:`\mathcal{L}^{i,j}_f` and its fGen gradient, in parts.

Client :math:`j` answers client :math:`i`'s request (:mod:`stamen.algorithms.fedsage.model`, "FedSage+'s
cross-client feature matching") with the gradient of

.. math::
    \mathcal{L}^{i,j}_f = \sum_{p} \sum_{q \in Q_p} c_q \,
      \lVert \mathbf{W}_p \mathbf{a}_q + \mathbf{b}_p - \mathbf{x}^j_{u(q)} \rVert^2,
    \qquad c_q = \frac{1}{F \, k_{v(q)} \, |A_i|},

where :math:`Q_p` are the nodes that use slot :math:`p` (:math:`p < k_v`),
:math:`\mathbf{a}_q` is fGen's hidden layer on node :math:`q`'s input (its weights and
dropout as in training), :math:`\mathbf{W}_p \in \mathbb{R}^{F \times H}` and
:math:`\mathbf{b}_p` are slot :math:`p`'s rows of fGen's last layer, and :math:`u(q)` is
the row of :math:`j`'s features :math:`\mathbf{X}^j` nearest to the generated one.

**Nothing of size** :math:`F` **per slot row.** Generating every used slot's row
(:math:`|Q_p| \times F`) and differentiating through it cost three
:math:`|Q_p| \times F \times H` products a slot and a client pair, about 30 ms a pair on Cora
(benchmarks/fedsage-schedule.md). Every quantity is instead taken through
:math:`\mathbf{X}^j\mathbf{W}_p` (one sparse product, :math:`\mathrm{nnz}(\mathbf{X}^j) \times H`)
and :math:`\mathbf{A}_p = \mathbf{W}_p^\top\mathbf{W}_p`, which client :math:`i` computes once
a step and sends with its weights (:func:`request_gram`; it follows from the weights, so it
tells nobody anything new):

- the nearest row, :math:`u(q) = \arg\min_u \lVert\mathbf{x}_u\rVert^2 - 2\,\mathbf{x}_u^\top\mathbf{b}_p
  - 2\,(\mathbf{X}^j\mathbf{W}_p)_u \mathbf{a}_q` (the query's own norm is the same for every :math:`u`);
- the loss, expanded: :math:`\mathbf{a}^\top\mathbf{A}_p\mathbf{a} + 2\,\mathbf{a}^\top\mathbf{W}_p^\top\mathbf{b}_p
  + \lVert\mathbf{b}_p\rVert^2 - 2\,(\mathbf{X}^j\mathbf{W}_p)_u\mathbf{a} - 2\,\mathbf{x}_u^\top\mathbf{b}_p
  + \lVert\mathbf{x}_u\rVert^2`;
- the gradient to fGen's hidden layer, :math:`2c_q(\mathbf{A}_p\mathbf{a}_q + \mathbf{W}_p^\top\mathbf{b}_p
  - (\mathbf{X}^j\mathbf{W}_p)_{u(q)}^\top)`, back-propagated through the first layer as usual;
- the last layer's gradient, split into what depends on :math:`j`'s features and what does not,

.. math::
    \frac{\partial \mathcal{L}^{i,j}_f}{\partial \mathbf{W}_p}
      = 2\,(\mathbf{W}_p \boldsymbol{\Gamma}_p + \mathbf{b}_p \boldsymbol{\sigma}_p^\top) + \mathbf{D}_p,
    \qquad
    \frac{\partial \mathcal{L}^{i,j}_f}{\partial \mathbf{b}_p}
      = 2\,(\mathbf{W}_p \boldsymbol{\sigma}_p + \tau_p \mathbf{b}_p) + \mathbf{d}_p,

with :math:`\boldsymbol{\Gamma}_p = \sum_q c_q \mathbf{a}_q\mathbf{a}_q^\top`,
:math:`\boldsymbol{\sigma}_p = \sum_q c_q \mathbf{a}_q`, :math:`\tau_p = \sum_q c_q`,
:math:`\mathbf{D}_p = -2\,\mathbf{X}^{j\top}\mathbf{S}_p` and :math:`\mathbf{d}_p = -2\,\mathbf{X}^{j\top}\mathbf{t}_p`
(:math:`\mathbf{S}_p`, :math:`\mathbf{t}_p`: each row :math:`u` the sum of :math:`c_q\mathbf{a}_q`,
:math:`c_q` over the queries matched to it). Client :math:`j` replies the parts
(:func:`cross_parts`), the server sums them over :math:`j` as it summed the gradients (every
part is linear in them), and client :math:`i` completes the sum with its own
:math:`\mathbf{W}_p, \mathbf{b}_p` once (:func:`complete_gradients`): the
:math:`F \times H \times H` product a slot is paid once a client and step, not once a pair.

**What leaves client** :math:`j`. :math:`\mathbf{D}_p` and :math:`\mathbf{d}_p` are the part of the
gradient that depends on :math:`j`'s features; :math:`\boldsymbol{\Gamma}_p, \boldsymbol{\sigma}_p,
\tau_p` depend on client :math:`i`'s request and :math:`j`'s dropout draws only, which are
seeded from the run's seed. So the parts tell the server what the gradient told it, and no
more: it had :math:`\mathbf{W}_p, \mathbf{b}_p` and could recompute the draws.

The same function as generating the rows and differentiating through them, up to float
rounding (tests/models/test_fedsage_fast.py keeps that implementation as the oracle): on a
near-tie the nearest row may differ, so a run's figures move in the last bits.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.func import functional_call

from stamen.models.object_cache import kept
from stamen.models.sparse_product import sparse_features

GRAM = "gram"  # request: A_p = W_p^T W_p, (P, H, H)
GRAM_BIAS = "gram-bias"  # request: W_p^T b_p, (P, H)
GAMMA = "gamma"  # reply part: Gamma_p, (P, H, H)
SIGMA = "sigma"  # reply part: sigma_p, (P, H)
TAU = "tau"  # reply part: tau_p, (P,)
ROWS = "rows"  # reply part: the non-zero rows of [D | d] stacked over the slots, as rows p F + f, (R,)
ROW_VALUES = "row-values"  # reply part: those rows, (R, H + 1); summed over j by concatenating both
PARTS = (GAMMA, SIGMA, TAU, ROWS, ROW_VALUES)


def last_layer(head: nn.Sequential) -> str:
    """The name of ``head``'s last layer (the linear map to the slots)."""
    return str(len(head) - 1)


def _per_slot(weights: dict[str, Tensor], last: str, slots: int) -> tuple[Tensor, Tensor]:
    """The last layer's weights per slot: ``W`` ``(P, F, H)`` and ``b`` ``(P, F)``."""
    weight, bias = weights[f"{last}.weight"], weights[f"{last}.bias"]
    return weight.view(slots, -1, weight.size(1)), bias.view(slots, -1)


def request_gram(head: nn.Sequential, slots: int) -> dict[str, Tensor]:
    r"""What client :math:`i` sends beside fGen's weights: :math:`\mathbf{A}_p = \mathbf{W}_p^\top\mathbf{W}_p`
    and :math:`\mathbf{W}_p^\top\mathbf{b}_p` for every slot."""
    with torch.no_grad():
        weight, bias = _per_slot(dict(head.named_parameters()), last_layer(head), slots)
        gram = torch.bmm(weight.transpose(1, 2), weight)
        gram_bias = torch.bmm(weight.transpose(1, 2), bias.unsqueeze(2)).squeeze(2)
    return {GRAM: gram, GRAM_BIAS: gram_bias}


def _times(x: Tensor, dense: Tensor) -> Tensor:
    """``x @ dense``, sparse where ``x`` is (:func:`~stamen.models.sparse_product.sparse_features`)."""
    sparse = sparse_features(x)
    return (sparse.csr @ dense.contiguous()) if sparse is not None else x @ dense


def nearest_generated(x_weight: Tensor, x_bias: Tensor, x_norms: Tensor, hidden: Tensor) -> Tensor:
    r"""The row of :math:`\mathbf{X}` nearest each generated row :math:`\mathbf{W}\mathbf{a}_q + \mathbf{b}`, from
    ``x_weight`` :math:`= \mathbf{X}\mathbf{W}` ``(n, H)``, ``x_bias`` :math:`= \mathbf{X}\mathbf{b}` ``(n,)``,
    ``x_norms`` :math:`\lVert\mathbf{x}_u\rVert^2` ``(n,)`` and the hidden rows ``hidden`` ``(q, H)``: ``(q,)``."""
    scores = (x_norms - 2 * x_bias).unsqueeze(1) - 2 * (x_weight @ hidden.t())  # (n, q)
    return scores.argmin(dim=0)


def _pulled_rows(x_other: Tensor, match: Tensor, weighted: Tensor, slot: int) -> tuple[Tensor, Tensor]:
    r"""The non-zero rows of :math:`-2\,\mathbf{X}^\top \mathbf{R}` where row :math:`u` of :math:`\mathbf{R}` sums the
    rows of ``weighted`` matched to :math:`u`: their indices (offset by ``slot`` F) and values."""
    nodes, which = torch.unique(match, return_inverse=True)
    summed = torch.zeros(nodes.numel(), weighted.size(1), dtype=weighted.dtype, device=weighted.device)
    summed.index_add_(0, which, weighted)
    x_nodes = x_other[nodes]  # (u, F), u <= q: only the matched nodes' features
    columns = (x_nodes != 0).any(dim=0).nonzero().squeeze(1)
    values = -2 * (x_nodes[:, columns].t() @ summed)
    return columns + slot * x_other.size(1), values


def cross_parts(
    head: nn.Sequential,
    weights: dict[str, Tensor],
    head_input: Tensor,
    slots: Tensor,
    x_other: Tensor,
    gram: dict[str, Tensor],
) -> tuple[float, dict[str, Tensor]]:
    r"""Client :math:`j`'s answer to client :math:`i`'s request: :math:`\mathcal{L}^{i,j}_f` and its gradient's parts.

    Args:
        head: fGen's layers (their weights unused: they may lie on the ``meta`` device), a
            ``Sequential`` whose last layer is the linear map to the slots.
        weights: client :math:`i`'s fGen weights by name in ``head``; dropout draws as in training.
        head_input: :math:`\mathbf{h}_v` ``(m, hidden)``; slots: :math:`k_v` ``(m,)``.
        x_other: client :math:`j`'s node features ``(n_j, F)``.
        gram: :func:`request_gram` of the weights.

    Returns:
        The loss and the parts by name: the gradients of the layers before the last under their
        parameters' names; :math:`\boldsymbol{\Gamma}, \boldsymbol{\sigma}, \tau` under :data:`GAMMA`,
        :data:`SIGMA`, :data:`TAU`; the non-zero rows of :math:`[\mathbf{D}_p \,|\, \mathbf{d}_p]` stacked
        over the slots under :data:`ROWS` (their indices) and :data:`ROW_VALUES`.
    """
    num_slots = gram[GRAM].size(0)
    last = last_layer(head)
    weight, bias = _per_slot(weights, last, num_slots)
    width = weight.size(2)
    earlier = {key: value.detach().requires_grad_() for key, value in weights.items() if not key.startswith(f"{last}.")}
    hidden = functional_call(head[:-1], earlier, (head_input,))  # (m, H): fGen's hidden layer, in training mode
    zeros = dict(dtype=hidden.dtype, device=hidden.device)
    gamma = torch.zeros(num_slots, width, width, **zeros)
    sigma, tau = torch.zeros(num_slots, width, **zeros), torch.zeros(num_slots, **zeros)
    rows, values = [torch.zeros(0, dtype=torch.long, device=hidden.device)], [torch.zeros(0, width + 1, **zeros)]
    grad_hidden = torch.zeros_like(hidden)
    total = torch.zeros((), **zeros)
    m = slots.size(0)
    with torch.no_grad():
        a = hidden.detach()
        if m > 0 and x_other.size(0) > 0:
            x_norms = kept(x_other, "squared-row-norms", lambda: x_other.pow(2).sum(dim=1))
            x_bias = _times(x_other, bias.t())  # (n, P): x_u . b_p
            scale = 1.0 / (weight.size(1) * slots.clamp(min=1).to(a.dtype) * m)  # c_q of each node
            for p in range(num_slots):
                chosen = (slots > p).nonzero().squeeze(1)
                if chosen.numel() == 0:
                    continue
                h, c = a[chosen], scale[chosen]
                x_weight = _times(x_other, weight[p])  # (n, H): X W_p
                match = nearest_generated(x_weight, x_bias[:, p], x_norms, h)
                gram_h = h @ gram[GRAM][p]  # (q, H): A_p a_q
                matched = x_weight[match]  # (q, H)
                total += (
                    c * ((gram_h * h).sum(1) + 2 * h @ gram[GRAM_BIAS][p] + bias[p].pow(2).sum()
                         - 2 * (matched * h).sum(1) - 2 * x_bias[match, p] + x_norms[match])
                ).sum()  # fmt: skip
                grad_hidden.index_add_(0, chosen, 2 * c.unsqueeze(1) * (gram_h + gram[GRAM_BIAS][p] - matched))
                ch = c.unsqueeze(1) * h
                gamma[p], sigma[p], tau[p] = h.t() @ ch, ch.sum(dim=0), c.sum()
                slot_rows, slot_values = _pulled_rows(x_other, match, torch.cat([ch, c.unsqueeze(1)], dim=1), p)
                rows.append(slot_rows)
                values.append(slot_values)
    grads = torch.autograd.grad(hidden, list(earlier.values()), grad_hidden, allow_unused=True)
    parts = {key: grad if grad is not None else torch.zeros_like(earlier[key]) for key, grad in zip(earlier, grads)}
    parts.update({GAMMA: gamma, SIGMA: sigma, TAU: tau, ROWS: torch.cat(rows), ROW_VALUES: torch.cat(values)})
    return float(total), parts


def complete_gradients(head: nn.Sequential, parts: dict[str, Tensor]) -> dict[str, Tensor]:
    r"""The gradients of fGen's parameters (by name in ``head``) from the parts :func:`cross_parts` returns
    (or their sums over clients :math:`j`, :data:`ROWS` and :data:`ROW_VALUES` concatenated), with
    ``head``'s own last layer :math:`\mathbf{W}_p, \mathbf{b}_p`."""
    gamma = parts[GAMMA]
    last = last_layer(head)
    weight, bias = _per_slot({k: v.detach() for k, v in head.named_parameters()}, last, gamma.size(0))
    width = weight.size(2)
    sparse = torch.zeros(weight.size(0) * weight.size(1), width + 1, dtype=gamma.dtype, device=gamma.device)
    sparse.index_add_(0, parts[ROWS], parts[ROW_VALUES])  # [D | d], the rows p F + f
    sparse = sparse.view(weight.size(0), weight.size(1), width + 1)
    sigma, tau = parts[SIGMA], parts[TAU]
    grad_weight = sparse[:, :, :width] + 2 * (torch.bmm(weight, gamma) + bias.unsqueeze(2) * sigma.unsqueeze(1))
    grad_bias = sparse[:, :, width] + 2 * (torch.bmm(weight, sigma.unsqueeze(2)).squeeze(2) + tau.unsqueeze(1) * bias)
    gradients = {key: value for key, value in parts.items() if key not in PARTS}
    gradients[f"{last}.weight"] = grad_weight.reshape(-1, width)
    gradients[f"{last}.bias"] = grad_bias.reshape(-1)
    return gradients
