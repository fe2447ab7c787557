r"""A link predictor: a node classifier's encoder and linear head as the node embedder, then a decoder.

The node embeddings are :math:`\mathbf{Z} = \mathrm{head}(\mathrm{encoder}(\mathbf{X}, \mathbf{A}))`:
the run's model (:func:`stamen.models.node_classifier.build_model`) with its head mapping to
``hidden`` outputs instead of classes. A 2-layer GCN so built is the graph autoencoder's
encoder :math:`\hat{\mathbf{A}}\,\sigma(\hat{\mathbf{A}}\mathbf{X}\mathbf{W}_1)\mathbf{W}_2`
(Kipf and Welling 2016), the last weight matrix being the head (see that module). An edge's
score (a logit) comes from its two ends' embeddings:

- ``dot``: :math:`s(u, v) = \mathbf{z}_u^\top \mathbf{z}_v` (no weights);
- ``mlp``: :math:`s(u, v) = \mathbf{w}_2^\top \mathrm{ReLU}(\mathbf{W}_1 (\mathbf{z}_u \odot \mathbf{z}_v)
  + \mathbf{b}_1) + b_2`,
  symmetric in :math:`u, v` as the graph is undirected.

Every weight is a parameter of one module, so the FL algorithms average it as they average a
node classifier's.
"""

from __future__ import annotations

from torch import Tensor, nn

from stamen.models.names import LINK_DECODERS
from stamen.models.node_classifier import NodeClassifier, build_model


class LinkPredictor(nn.Module):
    """Node embeddings from ``node`` (``(x, edge_index) -> (n, width)``), edge logits from ``decoder``."""

    def __init__(self, node: NodeClassifier, width: int, decoder: str = "dot") -> None:
        super().__init__()
        if decoder not in LINK_DECODERS:
            raise ValueError(f"unknown link decoder {decoder!r}; choose one of: {', '.join(LINK_DECODERS)}")
        self.node = node
        self.decoder = (
            None if decoder == "dot" else nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))
        )

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """The node embeddings."""
        return self.node(x, edge_index)

    def score(self, embeddings: Tensor, pairs: Tensor) -> Tensor:
        """The logits of ``pairs`` (``(2, m)`` node ids) from ``embeddings``."""
        product = embeddings[pairs[0]] * embeddings[pairs[1]]
        if self.decoder is None:
            return product.sum(dim=-1)
        return self.decoder(product).squeeze(-1)


def build_link_predictor(
    name: str, in_dim: int, hidden: int, num_layers: int, dropout: float, decoder: str = "dot"
) -> LinkPredictor:
    """The run's model ``name`` embedding nodes into ``hidden`` dimensions, with ``decoder`` on top."""
    width = max(hidden, 2)  # build_model's head needs two outputs at least
    return LinkPredictor(
        build_model(name, in_dim, width, hidden=hidden, num_layers=num_layers, dropout=dropout), width, decoder
    )
