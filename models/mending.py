r"""FedSage's graph mending: a classifier run on a graph mended with generated neighbours.

Zhang et al., NeurIPS 2021 (see :mod:`models.fedsage`). With a trained NeighGen a
client predicts for each node :math:`v` of its subgraph a number of missing
neighbours :math:`k_v = \min(\mathrm{round}(\hat n_v), P)` and their features
:math:`\hat{\mathbf{X}}_{v,0..k_v-1}`, and adds them as new nodes joined to
:math:`v` by an edge each way (:func:`mend`). The node classifier (GraphSAGE in the
paper) is trained and evaluated on the mended graph; only the original nodes carry
labels and predictions.

:class:`MendedClassifier` does the mending inside ``forward``: a frozen generator
mends whatever graph it is given (the client's training graph, its whole subgraph
for unseen nodes, a new client's graph), so every evaluation sees a mended graph.
The generator mends without its training noise and dropout, so a graph is always
mended the same way.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from models.fedsage import NeighGen


def mend(x: Tensor, edge_index: Tensor, counts: Tensor, features: Tensor) -> tuple[Tensor, Tensor]:
    """``x`` and ``edge_index`` with ``counts[v]`` generated neighbours joined to each node ``v``.

    Args:
        x: ``(n, F)`` node features.
        edge_index: ``(2, E)`` edges.
        counts: ``(n,)`` predicted missing-neighbour counts (rounded and clipped to ``[0, P]``).
        features: ``(n, P, F)`` generated neighbour features; node ``v`` gets slots ``0..k_v-1``.

    Returns:
        The mended graph: nodes ``0..n-1`` unchanged, then the generated nodes grouped by
        the node they join (in node order, slots in order), with an edge each way.
    """
    n, slots = features.shape[:2]
    k = counts.round().clamp(0, slots).long()
    chosen = torch.arange(slots, device=x.device).unsqueeze(0) < k.unsqueeze(1)  # (n, P)
    anchors = chosen.nonzero()[:, 0]  # row-major: grouped by node, slots in order
    new = torch.arange(n, n + anchors.numel(), device=x.device)
    added = torch.cat([torch.stack([anchors, new]), torch.stack([new, anchors])], dim=1)
    return torch.cat([x, features[chosen].to(x.dtype)]), torch.cat([edge_index, added], dim=1)


class MendedClassifier(nn.Module):
    """``classifier`` applied to the graph mended by a frozen ``generator``; logits of the original nodes.

    ``state_dict`` holds both parts (``classifier.*``, ``generator.*``); a client shares
    the classifier only.
    """

    def __init__(self, classifier: nn.Module, generator: NeighGen) -> None:
        super().__init__()
        self.classifier = classifier
        self.generator = generator.eval().requires_grad_(False)

    def train(self, mode: bool = True) -> MendedClassifier:
        super().train(mode)
        self.generator.eval()  # the generator mends, it is not trained here
        return self

    def mended(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        with torch.no_grad():
            counts, features = self.generator(x, edge_index)
        return mend(x, edge_index, counts, features)

    @property
    def head(self) -> nn.Module:
        return self.classifier.head

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """The classifier's embeddings of the original nodes on the mended graph."""
        return self.classifier.embed(*self.mended(x, edge_index))[: x.size(0)]

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        mended_x, mended_edges = self.mended(x, edge_index)
        return self.classifier(mended_x, mended_edges)[: x.size(0)]
