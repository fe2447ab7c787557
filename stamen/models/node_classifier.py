r"""Node classifiers with an explicit encoder -> head split.

Every model is ``logits = head(encoder(x, edge_index))``: the encoder maps nodes to
embeddings :math:`\mathbf{H} \in \mathbb{R}^{n \times h'}`, the head is one linear
layer :math:`\mathbf{H}\mathbf{W} + \mathbf{b}`. Unlearning edits the head in
closed form from its inputs (the embeddings), FedLoG classifies by prototypes of
the embeddings, DP-SGD trains per-node heads: all of them need this split.

Because neighbourhood aggregation is linear, the last message-passing layer of GCN,
SGC, APPNP and GraphSAGE factors exactly into "aggregate, then a linear map". Their
encoders therefore end with the parameter-free aggregation and the head holds the
last weight matrix, so an ``L``-layer model here *is* the textbook ``L``-layer model:

- GCN: :math:`\mathbf{H} = \hat{\mathbf{A}}\,\sigma(\cdots\sigma(\hat{\mathbf{A}}\mathbf{X}\mathbf{W}_1)\cdots)`,
  :math:`\hat{\mathbf{A}} = \mathbf{D}^{-1/2}(\mathbf{A}+\mathbf{I})\mathbf{D}^{-1/2}`;
- SGC: :math:`\mathbf{H} = \hat{\mathbf{A}}^L \mathbf{X}` (no weights in the encoder);
- APPNP: :math:`\mathbf{H} = \Pi_{\mathrm{ppr}}\,\sigma(\mathbf{X}\mathbf{W}_1)` with ``L`` power-iteration
  steps of teleport ``alpha``;
- GraphSAGE: :math:`\mathbf{h}_i = [\mathbf{z}_i \,\|\, \mathrm{mean}_{j \in N(i)} \mathbf{z}_j]` over the
  previous layer's :math:`\mathbf{z}` (so the head sees twice the hidden width);
- GAT: ``L`` attention layers to the hidden width (attention is not linear, so the head
  is an extra linear layer);
- MLP: ``L - 1`` hidden layers; no edges used.
"""

from __future__ import annotations

import importlib

import torch
from torch import Tensor, nn
from torch_geometric.nn import APPNP, GATConv

from stamen.models.feature_dropout import feature_dropout, sparse_feature_dropout
from stamen.models.names import MODEL_SPECS, MODELS
from stamen.models.sparse_layers import GCNLayer, LinearLayer, SAGELayer
from stamen.models.sparse_product import SparseMatrix, gcn_adjacency, mean_adjacency, sparse_features
from stamen.models.stacked_rows import StackedRows


class GCNPropagation(nn.Module):
    r"""Parameter-free symmetric GCN aggregation :math:`\hat{\mathbf{A}}\mathbf{H}` applied ``hops`` times."""

    def __init__(self, hops: int = 1) -> None:
        super().__init__()
        self.hops = hops

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        adjacency = gcn_adjacency(edge_index, x.size(0), x.dtype)  # normalised once per graph
        for _ in range(self.hops):
            x = adjacency @ x
        return x


class Encoder(nn.Module):
    """A stack of layers with ReLU and dropout between them, then a final (parameter-free) aggregation."""

    def __init__(self, layers: list[nn.Module], final: nn.Module | None, dropout: float, uses_edges: bool) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.final = final
        self.dropout = dropout
        self.uses_edges = uses_edges

    def transform(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """Everything but the final aggregation (per node when the layers use no edges).

        Dropout draws for the input features' non-zero entries only
        (:mod:`stamen.models.feature_dropout`). A first layer that reads sparse input
        (:mod:`stamen.models.sparse_layers`) gets sparse features as a sparse matrix, unless a
        forward hook watches it: hooks (Opacus's, DP-SGD's tape) expect tensors.
        """
        x = self.first_input(x, self.training)
        for index, layer in enumerate(self.layers):
            if index > 0:
                x = nn.functional.dropout(x, self.dropout, self.training)
            x = layer(x, edge_index) if self.uses_edges else layer(x)
            x = torch.relu(x)
        return nn.functional.dropout(x, self.dropout, self.training) if self.layers else x

    def first_input(
        self, x: Tensor | StackedRows, training: bool, generator: torch.Generator | None = None
    ) -> Tensor | SparseMatrix | StackedRows:
        """The node features after input dropout (its draws from ``generator`` if given, else torch's),
        as the first layer reads them: a sparse matrix for a layer that takes one, unwatched by hooks.

        A graph with added rows (:class:`~stamen.models.stacked_rows.StackedRows`, FedSage's mended graph)
        drops out its own rows as any graph's and leaves the added rows whole: they are the
        frozen generator's outputs, and FedSage's reference classifiers draw no input dropout at all.
        """
        first = self.layers[0] if self.layers else None
        reads_sparse = getattr(first, "takes_sparse", False) and not (first._forward_hooks or first._forward_pre_hooks)
        if isinstance(x, StackedRows):  # a mended graph: dropout on the graph's own rows only
            rows = x.with_top(self.first_input(x.top, training, generator))
            return rows if reads_sparse else rows.dense()
        features = sparse_features(x) if reads_sparse else None
        if features is not None:
            return sparse_feature_dropout(features, self.dropout, training, generator)
        return feature_dropout(x, self.dropout, training, generator)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        x = self.transform(x, edge_index)
        return x if self.final is None else self.final(x, edge_index)


class SAGEReadout(nn.Module):
    """``[z_i || mean_{j in N(i)} z_j]``: the input of GraphSAGE's last (linear) layer."""

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return torch.cat([x, mean_adjacency(edge_index, x.size(0), x.dtype) @ x], dim=-1)


class NodeClassifier(nn.Module):
    """``logits = head(encoder(x, edge_index))`` with a linear head.

    Args:
        encoder: maps ``(x, edge_index)`` to embeddings of width ``embedding_dim``.
        embedding_dim: width of the embeddings.
        num_classes: number of output logits.
    """

    def __init__(self, encoder: nn.Module, embedding_dim: int, num_classes: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(embedding_dim, num_classes)
        self.embedding_dim = embedding_dim

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.encoder(x, edge_index)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.head(self.encoder(x, edge_index))


def build_model(
    name: str,
    in_dim: int,
    num_classes: int,
    hidden: int = 64,
    num_layers: int = 2,
    dropout: float = 0.5,
    appnp_alpha: float = 0.1,
) -> NodeClassifier:
    """Build a node classifier by name.

    Args:
        name: one of :data:`MODELS`.
        in_dim: input feature width.
        num_classes: number of classes.
        hidden: hidden width.
        num_layers: number of layers (message-passing hops for the GNNs; SGC's ``K``,
            APPNP's power-iteration steps).
        dropout: dropout probability.
        appnp_alpha: APPNP teleport probability.
    """
    if name not in MODELS:
        return _plugin_model(name, in_dim, num_classes, hidden, num_layers, dropout)
    if num_layers < 1 or hidden < 1 or in_dim < 1 or num_classes < 2:
        raise ValueError(
            f"model needs num-layers >= 1, hidden >= 1, features >= 1 and classes >= 2 "
            f"(got {num_layers}, {hidden}, {in_dim}, {num_classes})"
        )
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
    widths = [in_dim] + [hidden] * (num_layers - 1)
    pairs = list(zip(widths[:-1], widths[1:]))
    embedding_dim = widths[-1]
    if name == "gcn":
        encoder = Encoder([GCNLayer(a, b) for a, b in pairs], GCNPropagation(1), dropout, True)
    elif name == "sgc":
        encoder = Encoder([], GCNPropagation(num_layers), dropout, True)
        embedding_dim = in_dim
    elif name == "sage":
        encoder = Encoder([SAGELayer(a, b) for a, b in pairs], SAGEReadout(), dropout, True)
        embedding_dim = 2 * widths[-1]
    elif name == "gat":
        heads = 4 if hidden % 4 == 0 else 1
        layers = [GATConv(a, hidden // heads, heads=heads) for a in [in_dim] + [hidden] * (num_layers - 1)]
        encoder = Encoder(layers, None, dropout, True)
        embedding_dim = hidden
    elif name == "appnp":
        encoder = Encoder([LinearLayer(in_dim, hidden)], APPNP(K=num_layers, alpha=appnp_alpha), dropout, False)
        embedding_dim = hidden
    else:  # mlp: num_layers linear maps in all, the last one being the head
        encoder = Encoder([LinearLayer(a, b) for a, b in pairs], None, dropout, False)
    return NodeClassifier(encoder, embedding_dim, num_classes)


def _plugin_model(
    name: str, in_dim: int, num_classes: int, hidden: int, num_layers: int, dropout: float
) -> NodeClassifier:
    """A registered model's encoder (:class:`stamen.models.names.ModelSpec`'s factory) under the linear head."""
    spec = MODEL_SPECS.lookup(name, "model")
    module, _, function = spec.encoder.partition(":")
    factory = getattr(importlib.import_module(module), function, None) if module else None
    if not callable(factory):
        raise ValueError(f"model {name!r}: {spec.encoder!r} names no encoder factory")
    encoder, width = factory(in_dim, hidden, num_layers, dropout)
    if not isinstance(encoder, nn.Module) or not isinstance(width, int) or width < 1:
        raise ValueError(f"model {name!r}: its factory must return (torch.nn.Module, embedding width >= 1)")
    return NodeClassifier(encoder, width, num_classes)
