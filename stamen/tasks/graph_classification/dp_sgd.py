r"""DP-SGD for graph classification: each graph is one record, its gradient taken alone, clipped, noised.

A client holds graphs :math:`G_1, \dots, G_N`, disjoint from one another. A graph
classifier (:mod:`stamen.tasks.graph_classification.model`) passes messages only along a graph's own
edges, reads each graph out by itself and has no batch normalisation, so the loss of
graph :math:`i`,

.. math:: \ell_i(\theta) = -\log \mathrm{softmax}\big(f_\theta(G_i)\big)_{y_i},

depends on :math:`G_i` alone (its nodes, edges, features and label), and its gradient
:math:`\mathbf{g}_i = \nabla_\theta \ell_i` is a per-record gradient exactly: removing
:math:`G_i` from the client removes :math:`\mathbf{g}_i` from every sum and changes no
other graph's gradient. (Node classification has no such record: a node's features reach
its neighbours' logits through message passing, which is why its DP-SGD needs a decoupled
model, :mod:`stamen.client.privacy`.)

A step is Abadi et al.'s (2016), in Opacus's convention as :mod:`stamen.models.dp_sgd` takes it:
with the Poisson batch :math:`B` (each training graph kept with probability :math:`q`),

.. math::

    \tilde{\mathbf{g}} = \frac{1}{\lfloor qN \rfloor}\Big(\sum_{i \in B} c_i\,\mathbf{g}_i
        + \mathcal{N}(0, \sigma^2 C^2 \mathbf{I})\Big),\qquad
    c_i = \min\Big(1, \frac{C}{\lVert \mathbf{g}_i \rVert + 10^{-6}}\Big),

so one graph moves the noiseless sum by at most :math:`C` (``max-grad-norm``): the sampled
Gaussian mechanism with rate :math:`q` and multiplier :math:`\sigma` that the RDP
accountant composes, for neighbouring client datasets that differ in one whole graph
(graph-level DP).

The per-graph gradients are microbatches of one graph: a forward and a backward pass per
graph of the batch, over the optimizer's trainable parameters. It is exact for any layer
(GIN's MLPs, GCN's normalised sums, the readouts); vectorising over graphs
(``torch.func.vmap``) would need every graph padded to one size, and the client's graphs are
small, so the loop costs little. Dropout draws its masks per graph from torch's global
generator and the noise follows, one ``torch.normal`` per parameter in the optimizer's order
(:func:`stamen.models.dp_sgd.gaussian_noise`): the ClientApp seeds that generator on every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from stamen.client.privacy import PrivateTraining, noise_multiplier, private_epochs, sample_rate
from stamen.contract.run_config import RunConfig
from stamen.models.dp_sgd import DpSgdSettings, clip_factors, expected_batch_size, gaussian_noise, trainable
from stamen.tasks.graph_classification.model import GraphClassifier

if TYPE_CHECKING:  # Opacus loads on first use (stamen.client.privacy)
    from opacus.accountants import RDPAccountant


def graph_loss(model: GraphClassifier, graph: Data) -> Tensor:
    """The cross-entropy of one graph's class (a scalar): the graph alone, as a batch of one."""
    batch = torch.zeros(graph.num_nodes, dtype=torch.long, device=graph.x.device)
    logits = model(graph.x, graph.edge_index, batch, 1)
    return nn.functional.cross_entropy(logits, graph.y.reshape(1))


def clipped_graph_sum(
    model: GraphClassifier, graphs: Sequence[Data], params: Sequence[nn.Parameter], max_grad_norm: float
) -> tuple[list[Tensor], list[float]]:
    r""":math:`\sum_i c_i \mathbf{g}_i` over ``graphs`` for each of ``params`` (a graph's norm is taken over all
    of them), and each graph's loss."""
    sums = [torch.zeros_like(p) for p in params]
    losses: list[float] = []
    for graph in graphs:
        loss = graph_loss(model, graph)
        grads = torch.autograd.grad(loss, list(params), allow_unused=True)
        norm = torch.sqrt(sum(g.square().sum() for g in grads if g is not None))
        factor = clip_factors(norm.reshape(1), max_grad_norm)[0]
        for summed, g in zip(sums, grads, strict=True):
            if g is not None:
                summed.add_(factor * g)
        losses.append(float(loss.detach()))
    return sums, losses


def private_graph_step(
    model: GraphClassifier, optimizer: torch.optim.Optimizer, graphs: Sequence[Data], settings: DpSgdSettings
) -> float | None:
    """One DP-SGD step on the Poisson batch ``graphs``; its mean cross-entropy, or None for an empty batch.

    Every trainable parameter of ``optimizer`` gets ``grad = (clipped sum + noise) / expected batch``
    and the optimizer steps (an empty batch steps with the noise alone).
    """
    params = trainable(optimizer)
    sums, losses = clipped_graph_sum(model, graphs, params, settings.max_grad_norm)
    std = settings.noise_multiplier * settings.max_grad_norm
    with torch.no_grad():
        for p, summed in zip(params, sums, strict=True):
            p.grad = (summed + gaussian_noise(summed, std)) / settings.expected_batch_size
    optimizer.step()
    return sum(losses) / len(losses) if losses else None


def train_private_graphs(
    model: GraphClassifier,
    graphs: Sequence[Data],
    config: RunConfig,
    optimizer: torch.optim.Optimizer,
    accountant: RDPAccountant,
    generator: torch.Generator,
) -> PrivateTraining:
    """``local-epochs`` epochs of per-graph DP-SGD on a client's training ``graphs`` (graph classification).

    Each graph is one record (this module's step); the batches are Poisson samples of the graphs drawn from
    ``generator`` as :func:`stamen.client.privacy.train_private` draws them of nodes, so the accountant composes
    the same subsampled Gaussian steps.
    """
    rate = sample_rate(len(graphs), config.dp_batch_size, "graphs")
    sigma = noise_multiplier(config, len(graphs))
    settings = DpSgdSettings(sigma, config.max_grad_norm, expected_batch_size(len(graphs), rate))
    model.train()
    return private_epochs(
        len(graphs),
        lambda index: private_graph_step(model, optimizer, [graphs[i] for i in index.tolist()], settings),
        config.local_epochs,
        (rate, settings.noise_multiplier, config.target_delta),
        accountant,
        generator,
    )
