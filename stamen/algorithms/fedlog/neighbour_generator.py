r"""Neighbour generators: give a synthetic node a generated neighbour so it is embedded with structure.

A generator is an MLP :math:`g: \mathbb{R}^F \to \mathbb{R}^F` trained at a client to
predict a node's mean neighbour features from its own,

.. math::
    \min_g \frac{1}{|V_{\mathrm{train}}|} \sum_{i \in V_{\mathrm{train}}}
    \big\lVert g(\mathbf{x}_i) - \tfrac{1}{|N(i)|} \textstyle\sum_{j \in N(i)} \mathbf{x}_j \big\rVert^2 / F,

over its training nodes that have neighbours. The server turns the clients'
generators into one generator per class, averaging their weights with the class-share
weights :math:`w_{k,c}` (:func:`stamen.algorithms.fedlog.condensation.class_weights`), so a class is
generated the way the clients holding it see its neighbourhoods. A synthetic node
:math:`\mathbf{x}` of class :math:`c` is then embedded in the two-node graph
:math:`\{\mathbf{x}, g_c(\mathbf{x})\}` with an edge each way.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.utils import scatter

from stamen.models.sparse_layers import LinearLayer
from stamen.models.sparse_product import sparse_features
from stamen.models.training import adam


class NeighbourGenerator(nn.Module):
    """``F -> hidden -> F`` MLP with ReLU and dropout; its first layer also takes sparse features
    (:class:`~stamen.models.sparse_layers.LinearLayer`, a ``nn.Linear`` with the same parameters)."""

    def __init__(self, in_dim: int, hidden: int = 256, dropout: float = 0.5) -> None:
        super().__init__()
        self.net = nn.Sequential(LinearLayer(in_dim, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, in_dim))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


def mean_neighbour_features(x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
    """Each node's mean neighbour features and whether it has any neighbour."""
    source, target = edge_index
    count = torch.bincount(target, minlength=x.size(0))
    return scatter(x[source], target, dim=0, dim_size=x.size(0), reduce="mean"), count > 0


def train_generator(
    generator: NeighbourGenerator, x: Tensor, edge_index: Tensor, train_mask: Tensor, epochs: int, lr: float = 0.01
) -> float:
    """Fit ``generator`` full-batch to the mean neighbour features of the training nodes; return the last loss."""
    target, has_neighbours = mean_neighbour_features(x, edge_index)
    nodes = train_mask & has_neighbours
    if not bool(nodes.any()) or epochs == 0:
        return float("nan")
    optimizer = adam(generator.parameters(), lr)
    generator.train()
    loss = torch.tensor(float("nan"))
    own = x[nodes]
    inputs = sparse_features(own)  # bag-of-words features: the first layer's product as a sparse one
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(generator(own if inputs is None else inputs), target[nodes])
        loss.backward()
        optimizer.step()
    generator.eval()
    return float(loss.detach())


def with_generated_neighbours(
    features: Tensor, labels: Tensor, generators: list[NeighbourGenerator]
) -> tuple[Tensor, Tensor]:
    """Each synthetic node followed by its class generator's neighbour, and the edges between them.

    Returns ``(x, edge_index)`` of ``n`` disjoint two-node graphs: node ``2i`` is
    ``features[i]``, node ``2i + 1`` its generated neighbour.
    """
    with torch.no_grad():
        neighbours = torch.empty_like(features)
        for label in labels.unique().tolist():
            chosen = labels == label
            neighbours[chosen] = generators[label](features[chosen])
    n = features.size(0)
    x = torch.stack([features, neighbours], dim=1).reshape(2 * n, -1)
    even = torch.arange(0, 2 * n, 2, device=features.device)
    edge_index = torch.cat([torch.stack([even, even + 1]), torch.stack([even + 1, even])], dim=1)
    return x, edge_index
