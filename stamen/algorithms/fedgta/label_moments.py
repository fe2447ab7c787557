r"""FedGTA's client statistics: label propagation, its mixed moments and the local smoothing confidence.

Li, Wu, Zhang, Zhu, Li and Wang, *FedGTA: Topology-aware Averaging for Federated
Graph Learning*, PVLDB 17(1), 2024 (VLDB 2024). After local training, client
:math:`i` turns its model's soft predictions :math:`\mathbf{P} = \mathrm{softmax}(\mathbf{Z})`
into topology-aware soft labels by :math:`K` steps of non-parametric label
propagation from its training nodes,

.. math::
    \hat{\mathbf{Y}}^{(0)} = \mathbf{P} \odot \mathbb{1}_{\mathrm{train}}, \qquad
    \hat{\mathbf{Y}}^{(k)} = \alpha \tilde{\mathbf{A}} \hat{\mathbf{Y}}^{(k-1)} + (1 - \alpha) \hat{\mathbf{Y}}^{(0)},

with :math:`\tilde{\mathbf{A}} = \mathbf{D}^{-1/2}\mathbf{A}\mathbf{D}^{-1/2}` (PyG's
``LabelPropagation``, without its clamping). Two statistics of
:math:`\hat{\mathbf{Y}} = \hat{\mathbf{Y}}^{(K)}` go to the server, each with the
training nodes' rows set to their one-hot labels:

- **mixed moments** of :math:`\mathbf{S} = \mathrm{softmax}(\hat{\mathbf{Y}})`: per class
  :math:`c` the raw moments :math:`\frac{1}{n}\sum_v S_{vc}^p` and the central moments
  :math:`\frac{1}{n}\sum_v (S_{vc} - \bar S_c)^p` for :math:`p = 1..m`, concatenated into
  :math:`\mathbf{m}_i \in \mathbb{R}^{2mC}`: a fingerprint of the client's label
  distribution as the topology smooths it;
- **local smoothing confidence**, with :math:`\mathbf{Q} = \mathrm{softmax}(\hat{\mathbf{Y}} / T)`
  and :math:`d_v` the degree of :math:`v` (in plus out),

  .. math::
      c_i = \sum_v d_v \sum_c \big(e^{-1} + Q_{vc} \log Q_{vc}\big) \;\ge 0,

  a degree-weighted negative entropy shifted to be non-negative (:math:`-q \log q \le e^{-1}`):
  high when propagation leaves confident, smooth predictions.

The server's use of them is in :mod:`stamen.algorithms.fedgta.server`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch_geometric.utils import degree, scatter


def propagate_labels(soft: Tensor, edge_index: Tensor, mask: Tensor, steps: int, alpha: float) -> Tensor:
    """``steps`` rounds of label propagation of ``soft``'s rows under ``mask`` (module docstring)."""
    n = soft.size(0)
    source, target = edge_index
    deg = degree(target, n, dtype=soft.dtype)
    norm = deg.clamp(min=1).pow(-0.5)
    weight = norm[source] * norm[target]
    start = torch.zeros_like(soft)
    start[mask] = soft[mask]
    out = start
    for _ in range(steps):
        out = alpha * scatter(out[source] * weight.unsqueeze(1), target, dim=0, dim_size=n, reduce="sum")
        out = out + (1 - alpha) * start
    return out


def mixed_moments(s: Tensor, order: int) -> Tensor:
    """Raw then central moments ``1..order`` over the nodes, per class: ``(2 * order * C,)``."""
    centred = s - s.mean(dim=0, keepdim=True)
    raw = [s.pow(p).mean(dim=0) for p in range(1, order + 1)]
    central = [centred.pow(p).mean(dim=0) for p in range(1, order + 1)]
    return torch.cat(raw + central)


def smoothing_confidence(q: Tensor, degrees: Tensor, eps: float = 1e-8) -> float:
    """``sum_v d_v sum_c (1/e + q_vc log q_vc)`` (module docstring)."""
    per_node = (math.exp(-1) + q * torch.log(q + eps)).sum(dim=1)
    return float((degrees * per_node).sum())


@torch.no_grad()
def fedgta_statistics(
    logits: Tensor,
    edge_index: Tensor,
    labels: Tensor,
    train_mask: Tensor,
    steps: int,
    alpha: float,
    temperature: float,
    order: int,
) -> tuple[Tensor, float]:
    """A client's mixed moments and smoothing confidence from its model's logits (module docstring)."""
    num_classes = logits.size(1)
    propagated = propagate_labels(torch.softmax(logits, dim=1), edge_index, train_mask, steps, alpha)
    onehot = torch.nn.functional.one_hot(labels[train_mask], num_classes).to(logits.dtype)
    s = torch.softmax(propagated, dim=1)
    q = torch.softmax(propagated / temperature, dim=1)
    s[train_mask] = onehot
    q[train_mask] = onehot
    n = logits.size(0)
    degrees = degree(edge_index[0], n, dtype=logits.dtype) + degree(edge_index[1], n, dtype=logits.dtype)
    return mixed_moments(s, order), smoothing_confidence(q, degrees)
