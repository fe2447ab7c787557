r"""FED-PUB's client side: sparse personal masks on the weights, functional embeddings on a random graph.

Baek, Jeong, Jin, Yoon and Hwang, *Personalized Subgraph Federated Learning*, ICML 2023.

**Masks.** Client :math:`i` keeps a personal mask :math:`\mathbf{M}_i` for every weight
matrix :math:`\mathbf{W}` of its GNN (initialised to ones) and computes with
:math:`\mathbf{W} \odot \mathbf{M}_i`. It trains weights and masks together on

.. math::
    \mathcal{L} = \mathrm{CE}\big(f(\mathbf{X}, \mathbf{A}; \boldsymbol{\theta} \odot \mathbf{M}_i)\big)
      + \lambda_1 \lVert \mathbf{M}_i \rVert_1
      + \lambda_2 \lVert \boldsymbol{\theta} - \bar{\boldsymbol{\theta}}_i \rVert_2,

the L1 term making the masks sparse and the second keeping the weights near the
personalised aggregate :math:`\bar{\boldsymbol{\theta}}_i` the server sent
(:math:`\lambda_1` = ``fedpub-l1``, :math:`\lambda_2` = ``fedpub-loc-l2``). Only the
weights :math:`\boldsymbol{\theta}` travel; the masks stay with the client. In
evaluation mode mask entries with :math:`|m|` below ``fedpub-prune`` count as zero (the
pruning of the authors' code, whose threshold is its ``l1``).

The authors' client (github JinheonBaek/FED-PUB, ``models/fedpub/client.py``) adds both
terms to its loss from ``model.state_dict()``, whose tensors are detached: they change
the loss's value, never its gradient, so its masks and weights train on the
cross-entropy alone. Stamen's defaults :math:`\lambda_1 = \lambda_2 = 0` reproduce that;
positive values give the paper's loss. With Adam, the L1 term's constant gradient moves
every mask entry the cross-entropy barely touches by about the learning rate per step, so
after a few dozen rounds most entries are pruned: on Cora the paper's loss
(:math:`\lambda_1 = \lambda_2 = 10^{-3}`) reached 83.1 % against the authors' code's 85.8 %
(benchmarks/fedpub-cora.md). Stamen's masks cover every weight matrix of any of
its models (the paper's masked GCN masks the convolutions and the classifier).

**Functional embedding.** The server cannot see subgraphs, so it compares the
clients' models by what they compute on one shared input: a random graph
:math:`G_{\mathrm{proxy}}`, the same for everyone as it is drawn from the run's seed.
As in the authors' code (github JinheonBaek/FED-PUB, its server's proxy data) it is
``graphs`` disjoint Erdos-Renyi graphs of ``nodes`` nodes each (a random partition
graph with :math:`p_{\mathrm{in}}` = ``edge_prob`` = 0.1 and no edges between the
parts; 5 x 100 nodes by default, mean degree about 10) with standard normal
features. Client :math:`i`'s functional embedding is its encoder's output averaged
over the proxy nodes, :math:`\mathbf{e}_i = \frac{1}{n} \sum_v h_i(G_{\mathrm{proxy}})_v`.
The server's use of it is in :mod:`stamen.algorithms.fedpub.server`.

**Training.** The authors' client keeps one Adam over weights and masks for the whole
run (its state is saved between rounds); so does Stamen's under
``keep-optimizer-state`` (the default). A fresh Adam each round makes every round's
first step :math:`\mathrm{lr} \cdot \mathrm{sign}(g)` on every weight and mask entry,
which on Cora cost FED-PUB up to 2.3 points (measured with the proxy change: benchmarks/fedpub-cora.md).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.func import functional_call
from torch_geometric.utils import to_undirected

from stamen.models.node_classifier import NodeClassifier


def _slot(name: str) -> str:
    return name.replace(".", "-")  # a ParameterDict key may not contain dots


class MaskedClassifier(nn.Module):
    """``base`` computing with every weight matrix times its personal mask (see the module docstring)."""

    def __init__(self, base: NodeClassifier, prune_below: float) -> None:
        super().__init__()
        self.base = base
        self.prune_below = prune_below
        self.masked = [name for name, param in base.named_parameters() if param.dim() >= 2]
        ones = {_slot(n): nn.Parameter(torch.ones_like(base.get_parameter(n))) for n in self.masked}
        self.masks = nn.ParameterDict(ones)

    def effective(self) -> dict[str, Tensor]:
        """The base's parameters with the masks applied (pruned in evaluation mode)."""
        weights = dict(self.base.named_parameters())
        for name in self.masked:
            mask = self.masks[_slot(name)]
            if not self.training:
                mask = mask.masked_fill(mask.abs() < self.prune_below, 0.0)
            weights[name] = weights[name] * mask
        return weights

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return functional_call(self.base, self.effective(), (x, edge_index))

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        encoder = {k.removeprefix("encoder."): v for k, v in self.effective().items() if k.startswith("encoder.")}
        return functional_call(self.base.encoder, encoder, (x, edge_index))

    @property
    def head(self) -> nn.Module:
        return self.base.head

    def mask_l1(self) -> Tensor:
        return sum(mask.abs().sum() for mask in self.masks.values())


PROXY_EDGE_PROB = 0.1  # the authors' p_in: each pair of nodes in one part is an edge with this probability


def proxy_graph(
    nodes: int, num_features: int, seed: int, graphs: int = 5, edge_prob: float = PROXY_EDGE_PROB
) -> tuple[Tensor, Tensor]:
    """The shared random graph (module docstring): ``graphs`` disjoint G(``nodes``, ``edge_prob``) parts,
    standard normal features, undirected edges; the same for one seed."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(graphs * nodes, num_features, generator=generator)
    source, target = torch.triu_indices(nodes, nodes, offset=1)
    edges = []
    for part in range(graphs):
        keep = torch.rand(source.numel(), generator=generator) < edge_prob
        edges.append(torch.stack([source[keep], target[keep]]) + part * nodes)
    return x, to_undirected(torch.cat(edges, dim=1), num_nodes=graphs * nodes)


@torch.no_grad()
def functional_embedding(model: nn.Module, proxy: tuple[Tensor, Tensor]) -> Tensor:
    """The mean over the proxy graph's nodes of ``model.embed`` (evaluation mode)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    embedding = model.embed(proxy[0].to(device), proxy[1].to(device)).mean(dim=0)
    model.train(was_training)
    return embedding


def fit_masked(
    model: MaskedClassifier,
    data,
    epochs: int,
    optimizer: torch.optim.Optimizer,
    l1: float,
    proximal: float,
) -> float:
    r"""Full-batch epochs of FED-PUB's local loss (module docstring); return the mean loss."""
    anchor = {name: param.detach().clone() for name, param in model.base.named_parameters()}
    model.train()
    total = 0.0
    for _ in range(epochs):
        optimizer.zero_grad()
        logits = model(data.x, data.edge_index)
        loss = nn.functional.cross_entropy(logits[data.train_mask], data.y[data.train_mask])
        if l1 > 0:
            loss = loss + l1 * model.mask_l1()
        if proximal > 0:
            drift = sum((param - anchor[name]).pow(2).sum() for name, param in model.base.named_parameters())
            loss = loss + proximal * torch.sqrt(drift + 1e-12)
        loss.backward()
        optimizer.step()
        total += float(loss.detach())
    return total / epochs
