r"""FedProto's local side: class prototypes, the prototype-regularised loss, nearest-prototype inference.

FedProto (Tan, Long, Liu, Zhou, Lu, Jiang, Zhang: *FedProto: Federated Prototype Learning
across Heterogeneous Clients*, AAAI 2022) shares class prototypes instead of weights. With
:math:`f_i` client :math:`i`'s encoder (``model.encoder``) and :math:`D_{i,j}` its training nodes
of class :math:`j`, its prototype of class :math:`j` is the mean embedding

.. math::
    C_i^{(j)} = \frac{1}{|D_{i,j}|} \sum_{x \in D_{i,j}} f_i(x),

computed here in evaluation mode (no dropout) after the round's local training
(:func:`class_prototypes`). The server averages them weighted by class counts,
:math:`\bar C^{(j)} = \sum_i |D_{i,j}|\, C_i^{(j)} / \sum_i |D_{i,j}|` (:mod:`stamen.algorithms.fedproto.server`).
The local loss (:func:`fit_prototypes`) is the cross-entropy of the local head plus the
distance of each training node's embedding to the global prototype of its class,

.. math::
    \mathcal{L}_i = \mathrm{CE}\big(g_i(f_i(x)), y\big)
        + \lambda \cdot \operatorname{mean}_{(x, y)} \tfrac{1}{d} \lVert f_i(x) - \bar C^{(y)} \rVert_2^2,

the mean over the training nodes whose class has a global prototype (none before the first
aggregation: plain cross-entropy). The squared distance is divided by the embedding width
:math:`d` (a mean squared error over the coordinates, the scale of the authors' implementation,
for which the paper's :math:`\lambda = 1` is meant): summed over the coordinates, :math:`\lambda = 1`
outweighs the cross-entropy by about :math:`d` and the embeddings collapse onto their shrinking
mean (a 5-client csbm run fell from 0.56 to 0.35 test accuracy over 20 rounds).

Inference follows the paper's prototype-based rule,
:math:`\hat y = \arg\min_j \lVert f_i(x) - \bar C^{(j)} \rVert_2` over the classes with a global
prototype (:class:`PrototypeClassifier`); until the client has received global prototypes it
predicts with its local head :math:`g_i`.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from stamen.models.node_classifier import NodeClassifier


@torch.no_grad()
def class_prototypes(model: NodeClassifier, data: Data) -> tuple[Tensor, Tensor]:
    """The client's prototypes ``(classes, embedding)`` (zero rows for classes without training
    nodes) and its training nodes per class ``(classes,)``, from the training graph in eval mode."""
    model.eval()
    embeddings = model.embed(data.x, data.edge_index)[data.train_mask]
    labels = data.y[data.train_mask]
    num_classes = int(data.num_classes)
    counts = torch.bincount(labels, minlength=num_classes)
    sums = torch.zeros(num_classes, embeddings.size(1), device=embeddings.device).index_add_(0, labels, embeddings)
    return sums / counts.clamp(min=1).unsqueeze(1).to(sums.dtype), counts


def prototype_distance(embeddings: Tensor, labels: Tensor, prototypes: Tensor, known: Tensor) -> Tensor:
    r"""Mean over the nodes whose class is ``known`` of :math:`\frac{1}{d}\lVert h - \bar C^{(y)} \rVert^2`
    (the mean squared error over nodes and coordinates; 0 if no class is known)."""
    keep = known[labels]
    if not bool(keep.any()):
        return embeddings.sum() * 0.0
    return (embeddings[keep] - prototypes[labels[keep]]).pow(2).mean()


def fit_prototypes(
    model: NodeClassifier,
    data: Data,
    epochs: int,
    optimizer: torch.optim.Optimizer,
    prototypes: Tensor,
    known: Tensor,
    lam: float,
) -> float:
    """``epochs`` full-batch steps of FedProto's local loss (module docstring); returns the mean loss.

    ``prototypes`` ``(classes, embedding)`` are the global ones, ``known`` ``(classes,)`` marks the
    classes that have one.
    """
    model.train()
    total = 0.0
    mask = data.train_mask
    for _ in range(epochs):
        optimizer.zero_grad()
        embeddings = model.embed(data.x, data.edge_index)[mask]
        loss = nn.functional.cross_entropy(model.head(embeddings), data.y[mask])
        if lam > 0:
            loss = loss + lam * prototype_distance(embeddings, data.y[mask], prototypes, known)
        loss.backward()
        optimizer.step()
        total += float(loss.detach())
    return total / epochs


class PrototypeClassifier(nn.Module):
    """A node classifier that predicts by the nearest global prototype (its head until it has any).

    ``forward`` returns scores whose argmax is the prediction: minus the squared distance
    to each known global prototype (``-inf`` for classes without one), or the head's logits.

    Args:
        model: the client's encoder -> head model.
        num_classes: number of classes.
    """

    def __init__(self, model: NodeClassifier, num_classes: int) -> None:
        super().__init__()
        self.model = model
        device = next(model.head.parameters()).device
        self.register_buffer("prototypes", torch.zeros(num_classes, model.embedding_dim, device=device))
        self.register_buffer("known", torch.zeros(num_classes, dtype=torch.bool, device=device))

    def set_prototypes(self, prototypes: Tensor, counts: Tensor) -> None:
        """Install the global prototypes; a class is known where its count is positive."""
        if prototypes.shape != self.prototypes.shape or counts.shape != self.known.shape:
            raise ValueError(
                f"global prototypes of shape {tuple(prototypes.shape)} with counts {tuple(counts.shape)} do not fit "
                f"{tuple(self.prototypes.shape)}; were they made for another model or dataset?"
            )
        self.prototypes.copy_(prototypes)
        self.known.copy_(counts > 0)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        embeddings = self.model.embed(x, edge_index)
        if not bool(self.known.any()):
            return self.model.head(embeddings)
        distances = (embeddings.unsqueeze(1) - self.prototypes.unsqueeze(0)).pow(2).sum(dim=-1)
        return (-distances).masked_fill(~self.known, float("-inf"))
