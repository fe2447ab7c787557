r"""FedSage+'s missing-neighbour generator (NeighGen), trained on a client's impaired subgraph.

Zhang, Yang, Li, Sun and Yiu, *Subgraph Federated Learning with Missing Neighbor
Generation*, NeurIPS 2021. A client cannot see the edges that leave its subgraph, so
it learns to generate them: it hides a share :math:`h` of its own nodes (the
*impaired* subgraph :math:`\bar G`) and learns, for every remaining node :math:`v`,
how many neighbours it lost, :math:`n_v = |N_G(v) \setminus N_{\bar G}(v)|`, and
their features :math:`\{\mathbf{x}_u\}_{u \in N_G(v) \setminus N_{\bar G}(v)}`.

NeighGen is an encoder and two heads:

- encoder :math:`\mathbf{z}_v = H^e(\bar G)_v`: two GraphSAGE layers (mean
  aggregator) over :math:`[\mathbf{x}_v \,\|\, \log(1 + \bar d_v)]`;
- dGen :math:`\hat n_v = \mathrm{ReLU}(\mathbf{w}_d^\top \mathbf{z}_v + b_d)`;
- fGen :math:`\hat{\mathbf{X}}_v = H^f(\mathbf{z}_v + \boldsymbol{\epsilon})
  \in \mathbb{R}^{P \times F}`, :math:`\boldsymbol{\epsilon} \sim \mathcal{N}(0, \mathbf{I})`
  while training, an MLP to :math:`P` (``max_pred``) feature slots,

trained with :math:`\mathcal{L} = \lambda_d \mathcal{L}_d + \lambda_f \mathcal{L}_f`:

.. math::
    \mathcal{L}_d = \frac{1}{|\bar V|} \sum_{v} \mathrm{SmoothL1}(\hat n_v, n_v), \qquad
    \mathcal{L}_f = \frac{1}{|\bar V|} \sum_{v} \frac{1}{k_v} \sum_{p < k_v}
      \min_{u \in N_G(v) \setminus N_{\bar G}(v)} \lVert \hat{\mathbf{X}}_{v,p} - \mathbf{x}_u \rVert^2 / F,

with :math:`k_v = \min(n_v, P)` (the paper's greedy matching loss; nodes that lost
no neighbour add no feature term). Differences from the paper, on purpose:

- the slots matched are the first :math:`\min(n_v, P)` by the *true* count rather
  than the predicted one, so fGen learns from the first epoch on, before dGen does;
- the encoder also sees :math:`\log(1 + \bar d_v)`: a mean aggregator alone cannot
  see a node's degree, and the number of lost neighbours grows with it;
- fGen's output has no ``tanh`` (Stamen's features are not scaled into [-1, 1]);
- the classifier's loss :math:`\mathcal{L}_c` on the mended impaired graph (the
  paper trains NeighGen jointly with it) is left out; the classifier is trained
  afterwards on the mended graph (:mod:`models.mending`);
- here each client's NeighGen learns from its own subgraph only (FedSage with local
  NeighGen, :mod:`client.fedsage`); FedSage+'s cross-client feature-matching term
  :math:`\alpha \sum_{j \neq i} \mathcal{L}_f^{i,j}` is :mod:`models.neighgen_cross`.

:func:`train_neighgen` is full-batch Adam, one :func:`local_gradients` per epoch; with
a ``seed`` every epoch's draws (dropout, the noise :math:`\boldsymbol{\epsilon}`) come
from :func:`epoch_seed`, so FedSage+ (one epoch per message exchange) repeats them.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn import SAGEConv
from torch_geometric.utils import degree, subgraph


class NeighGen(nn.Module):
    """Encoder (2 GraphSAGE layers), degree head (dGen) and feature head (fGen, ``max_pred`` slots)."""

    def __init__(self, in_dim: int, hidden: int = 64, max_pred: int = 5, dropout: float = 0.5) -> None:
        super().__init__()
        self.max_pred = max_pred
        self.in_dim = in_dim
        self.conv1 = SAGEConv(in_dim + 1, hidden)
        self.conv2 = SAGEConv(hidden, hidden)
        self.degree_head = nn.Linear(hidden, 1)
        self.feature_head = nn.Sequential(
            nn.Linear(hidden, 2 * hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(2 * hidden, max_pred * in_dim)
        )
        self.dropout = dropout

    def encode(self, x: Tensor, edge_index: Tensor) -> Tensor:
        observed = degree(edge_index[1], x.size(0), dtype=x.dtype).unsqueeze(1)
        h = torch.relu(self.conv1(torch.cat([x, torch.log1p(observed)], dim=1), edge_index))
        h = nn.functional.dropout(h, self.dropout, self.training)
        return self.conv2(h, edge_index)

    def forward(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        """Predicted missing-neighbour counts ``(n,)`` and features ``(n, max_pred, F)``."""
        counts, features, _ = self.forward_with_input(x, edge_index)
        return counts, features

    def forward_with_input(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """:meth:`forward`, and fGen's input :math:`\\mathbf{z}_v + \\boldsymbol{\\epsilon}` ``(n, hidden)``."""
        z = self.encode(x, edge_index)
        counts = torch.relu(self.degree_head(z)).squeeze(1)
        if self.training:
            z = z + torch.randn_like(z)
        return counts, self.generate(self.feature_head, z), z

    def generate(self, head: nn.Module, head_input: Tensor) -> Tensor:
        """fGen ``head`` (this generator's or a copy with other weights) on its input: ``(n, max_pred, F)``."""
        return head(head_input).view(-1, self.max_pred, self.in_dim)


class Impaired:
    """A subgraph with a share of its nodes hidden, and what each remaining node lost.

    Attributes:
        kept: indices (in the whole subgraph) of the remaining nodes.
        edge_index: the impaired subgraph's edges, on the remaining nodes renumbered ``0..len(kept)-1``.
        missing: each remaining node's number of hidden neighbours ``n_v``.
        targets: ``(len(kept), max_pred, F)``: features of up to ``max_pred`` hidden neighbours (zeros beyond).
        valid: ``(len(kept), max_pred)``: which target slots hold a hidden neighbour.
    """

    def __init__(self, x: Tensor, edge_index: Tensor, hidden_share: float, max_pred: int, generator: torch.Generator):
        n = x.size(0)
        hidden = torch.zeros(n, dtype=torch.bool)
        order = torch.randperm(n, generator=generator)
        hidden[order[: int(round(hidden_share * n))]] = True
        hidden = hidden.to(x.device)
        self.kept = (~hidden).nonzero().squeeze(1)
        self.edge_index, _ = subgraph(self.kept, edge_index, relabel_nodes=True, num_nodes=n)
        source, target = edge_index
        lost = hidden[source] & ~hidden[target]  # an edge from a hidden node into a kept one
        new_id = torch.full((n,), -1, dtype=torch.long, device=x.device)
        new_id[self.kept] = torch.arange(self.kept.numel(), device=x.device)
        rows, neighbours = new_id[target[lost]], source[lost]
        self.missing = torch.bincount(rows, minlength=self.kept.numel()).to(x.dtype)
        # slot of each lost neighbour among its node's: rank within equal rows (rows sorted first)
        order = torch.argsort(rows, stable=True)
        rows, neighbours = rows[order], neighbours[order]
        starts = torch.cumsum(self.missing.long(), 0) - self.missing.long()
        slots = torch.arange(rows.numel(), device=x.device) - starts[rows]
        keep = slots < max_pred
        self.targets = torch.zeros(self.kept.numel(), max_pred, x.size(1), dtype=x.dtype, device=x.device)
        self.targets[rows[keep], slots[keep]] = x[neighbours[keep]]
        self.valid = torch.zeros(self.kept.numel(), max_pred, dtype=torch.bool, device=x.device)
        self.valid[rows[keep], slots[keep]] = True


def matching_loss(generated: Tensor, targets: Tensor, valid: Tensor) -> Tensor:
    r"""FedSage's greedy feature-matching loss :math:`\mathcal{L}_f` (module docstring), over nodes with a target."""
    k = valid.sum(dim=1)  # k_v = min(n_v, P): slots trained, and targets to match
    distances = torch.cdist(generated, targets).pow(2) / generated.size(-1)  # (n, P, P): slot p vs target q
    distances = distances.masked_fill(~valid.unsqueeze(1), float("inf"))
    nearest = distances.min(dim=2).values  # each slot's closest hidden neighbour
    slots = torch.arange(generated.size(1), device=generated.device).unsqueeze(0) < k.unsqueeze(1)
    per_node = torch.where(slots, nearest, torch.zeros_like(nearest)).sum(dim=1) / k.clamp(min=1)
    has = k > 0
    return per_node[has].mean() if bool(has.any()) else generated.sum() * 0.0


def epoch_seed(seed: int, epoch: int) -> int:
    """The torch seed of training epoch ``epoch`` (from 0) of a generator seeded by ``seed``."""
    return seed * 7_919 + 104_729 * (epoch + 1)


def local_gradients(
    generator: NeighGen, features: Tensor, impaired: Impaired, weights: tuple[float, float] = (1.0, 1.0)
) -> tuple[float, float, Tensor]:
    r"""One forward and backward pass of :math:`\lambda_d \mathcal{L}_d + \lambda_f \mathcal{L}_f` (gradients left in
    ``.grad``, zeroed first); returns :math:`\mathcal{L}_d`, :math:`\mathcal{L}_f` and fGen's input (detached)."""
    generator.train()
    generator.zero_grad()
    counts, generated, head_input = generator.forward_with_input(features, impaired.edge_index)
    loss_d = nn.functional.smooth_l1_loss(counts, impaired.missing)
    loss_f = matching_loss(generated, impaired.targets, impaired.valid)
    (weights[0] * loss_d + weights[1] * loss_f).backward()
    return float(loss_d.detach()), float(loss_f.detach()), head_input.detach()


def new_optimizer(generator: NeighGen, lr: float) -> torch.optim.Adam:
    """NeighGen's optimizer (both FedSage variants)."""
    return torch.optim.Adam(generator.parameters(), lr=lr, weight_decay=5e-4)


def train_neighgen(
    generator: NeighGen,
    x: Tensor,
    edge_index: Tensor,
    impaired: Impaired,
    epochs: int,
    lr: float = 0.01,
    weights: tuple[float, float] = (1.0, 1.0),
    seed: int | None = None,
) -> tuple[float, float]:
    r"""Fit ``generator`` full-batch on the impaired subgraph; return the last :math:`\mathcal{L}_d, \mathcal{L}_f`.

    With ``seed``, epoch ``e`` draws from ``torch.manual_seed(epoch_seed(seed, e))``; without, from the
    running random state.
    """
    optimizer = new_optimizer(generator, lr)
    features = x[impaired.kept]
    last = (float("nan"), float("nan"))
    for epoch in range(epochs):
        if seed is not None:
            torch.manual_seed(epoch_seed(seed, epoch))
        loss_d, loss_f, _ = local_gradients(generator, features, impaired, weights)
        optimizer.step()
        last = (loss_d, loss_f)
    generator.eval()
    return last
