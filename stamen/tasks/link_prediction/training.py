r"""Local link-prediction training and evaluation on one client's edges (no Flower here).

A step scores the client's training edges :math:`E^+` and as many sampled non-edges
:math:`E^-` on the message-passing graph (the training edges, split by ``stamen.graphs.link_splits``)
and minimises the binary cross-entropy of the logits :math:`s`:

.. math:: \mathcal{L} = -\frac{1}{|E^+|}\sum_{E^+} \log\sigma(s) - \frac{1}{|E^-|}\sum_{E^-} \log(1 - \sigma(s))

(plus FedProx's proximal term :math:`\frac{\mu}{2}\lVert\mathbf{w} - \mathbf{w}^t\rVert^2` when ``proximal_mu > 0``).
The non-edges are drawn afresh every step, uniformly over pairs of the client's nodes, a
pair that is a training edge or a self-loop redrawn; the draws take torch's random state,
which the ClientApp seeds per client and round, so every engine draws the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from stamen.tasks.link_prediction.metrics import LinkFigures, link_figures
from stamen.tasks.link_prediction.model import LinkPredictor


def fit_links(
    model: LinkPredictor,
    x: Tensor,
    message_edges: Tensor,
    train_edges: Tensor,
    epochs: int,
    optimizer: torch.optim.Optimizer,
    proximal_mu: float = 0.0,
) -> float:
    """``epochs`` full-batch steps of BCE on ``train_edges`` (``(2, m)``, ``u < v``) against sampled non-edges,
    embedding on ``message_edges``; the mean loss."""
    anchor = [p.detach().clone() for p in model.parameters()] if proximal_mu > 0 else []
    num_nodes = x.size(0)
    known = torch.sort(train_edges[0] * num_nodes + train_edges[1]).values
    model.train()
    total = 0.0
    for _ in range(epochs):
        optimizer.zero_grad()
        embeddings = model(x, message_edges)
        positive = model.score(embeddings, train_edges)
        negative = model.score(embeddings, sample_negatives(num_nodes, train_edges.size(1), known, x.device))
        loss = nn.functional.binary_cross_entropy_with_logits(
            positive, torch.ones_like(positive)
        ) + nn.functional.binary_cross_entropy_with_logits(negative, torch.zeros_like(negative))
        if anchor:
            loss = loss + 0.5 * proximal_mu * sum((p - a).pow(2).sum() for p, a in zip(model.parameters(), anchor))
        loss.backward()
        optimizer.step()
        total += float(loss.detach())
    return total / epochs


def sample_negatives(num_nodes: int, count: int, known: Tensor, device: torch.device) -> Tensor:
    """``(2, count)`` pairs ``u < v`` of random nodes, none in ``known`` (sorted codes ``u * n + v``), from torch's
    random state. Pairs that hit a known edge or a self-loop are redrawn (a few rounds; what is left then stays,
    which on a graph sparse enough to learn links from does not happen)."""
    pairs = torch.empty((2, 0), dtype=torch.long, device=device)
    if num_nodes < 2 or count == 0:
        return pairs
    for _ in range(8):
        need = count - pairs.size(1)
        if need <= 0:
            break
        drawn = torch.randint(0, num_nodes, (2, need + need // 4 + 8), device=device)
        low, high = torch.minimum(drawn[0], drawn[1]), torch.maximum(drawn[0], drawn[1])
        codes = low * num_nodes + high
        keep = (low != high) & ~torch.isin(codes, known)
        pairs = torch.cat([pairs, torch.stack([low[keep], high[keep]])[:, :need]], dim=1)
    return pairs


@torch.no_grad()
def score_links(
    model: LinkPredictor, x: Tensor, message_edges: Tensor, sets: Sequence[tuple[Tensor, Tensor]], k: int
) -> list[LinkFigures]:
    """The figures of each ``(edges, non_edges)`` of ``sets``, scored on ``message_edges`` (one forward pass)."""
    model.eval()
    embeddings = model(x, message_edges)

    def scores(pairs: Tensor) -> np.ndarray:
        return model.score(embeddings, pairs).cpu().numpy().astype(np.float64)

    return [link_figures(scores(edges), scores(non_edges), k) for edges, non_edges in sets]
