r"""Local graph-classification training and evaluation on one client's graphs (no Flower here).

A local epoch is one pass over the client's training graphs in mini-batches of ``batch_size``
graphs (:class:`torch_geometric.loader.DataLoader`, which joins a mini-batch's graphs into one
disconnected graph), each batch a step on the cross-entropy of the graphs' classes

.. math:: \mathcal{L} = -\frac{1}{|B|} \sum_{G \in B} \log \mathrm{softmax}(f(G))_{y_G}

(plus FedProx's proximal term :math:`\frac{\mu}{2}\lVert\mathbf{w} - \mathbf{w}^t\rVert^2` when
``proximal_mu > 0``). The batches' order is shuffled by a generator of its own, seeded from torch's
random state, which the ClientApp seeds per client and round: every engine draws the same order.
Evaluation scores a client's graphs in one batch and counts the correct ones (the server pools
counts into accuracies, as it pools node classification's).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from stamen.tasks.graph_classification.model import GraphClassifier


def fit_graphs(
    model: GraphClassifier,
    graphs: Sequence[Data],
    epochs: int,
    batch_size: int,
    optimizer: torch.optim.Optimizer,
    proximal_mu: float = 0.0,
) -> float:
    """``epochs`` passes of cross-entropy over ``graphs`` in shuffled mini-batches; the mean batch loss
    (NaN without a training graph)."""
    if not graphs:
        return float("nan")
    anchor = [p.detach().clone() for p in model.parameters()] if proximal_mu > 0 else []
    generator = torch.Generator().manual_seed(int(torch.randint(0, 2**62, ())))  # from the seeded state
    loader = DataLoader(list(graphs), batch_size=batch_size, shuffle=True, generator=generator)
    device = next(model.parameters()).device
    model.train()
    total, steps = 0.0, 0
    for _ in range(epochs):
        for batch in loader:
            batch = batch.to(device)
            optimizer.zero_grad()
            logits = model(batch.x, batch.edge_index, batch.batch, batch.num_graphs)
            loss = nn.functional.cross_entropy(logits, batch.y)
            if anchor:
                loss = loss + 0.5 * proximal_mu * sum((p - a).pow(2).sum() for p, a in zip(model.parameters(), anchor))
            loss.backward()
            optimizer.step()
            total, steps = total + float(loss.detach()), steps + 1
    return total / steps


@torch.no_grad()
def correct_graphs(model: GraphClassifier, graphs: Sequence[Data]) -> int:
    """How many of ``graphs`` ``model`` classifies right (one forward pass over their batch)."""
    if not graphs:
        return 0
    model.eval()
    batch = Batch.from_data_list(list(graphs)).to(next(model.parameters()).device)
    predicted = model(batch.x, batch.edge_index, batch.batch, batch.num_graphs).argmax(dim=-1)
    return int((predicted == batch.y).sum())
