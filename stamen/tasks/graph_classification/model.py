r"""Graph classifiers: message passing over each graph's nodes, a readout per graph, a linear head.

``logits = head(dropout(readout(encoder(x, edge_index), batch)))`` for a batch of graphs
(``batch[i]``: node ``i``'s graph), with ``L`` message-passing layers of width ``h`` and ReLU:

- GIN (Xu et al., ICLR 2019): :math:`\mathbf{h}_i' = \mathrm{MLP}\big((1+\epsilon)\,\mathbf{h}_i +
  \sum_{j \in N(i)} \mathbf{h}_j\big)` with :math:`\epsilon = 0` and a two-layer MLP, then a **sum**
  readout :math:`\mathbf{h}_G = \sum_{i \in G} \mathbf{h}_i`: sums keep the multiset of neighbourhoods
  that makes GIN as discriminative as the 1-WL test (a mean would forget how many);
- GCN (Kipf and Welling, ICLR 2017): :math:`\mathbf{H}' = \hat{\mathbf{A}}\mathbf{H}\mathbf{W}`,
  :math:`\hat{\mathbf{A}} = \mathbf{D}^{-1/2}(\mathbf{A}+\mathbf{I})\mathbf{D}^{-1/2}`, then a **mean**
  readout, GCN's usual graph-level form.

The layers are PyG's (``GINConv``, ``GCNConv``; node classification's sparse GCN layers in
:mod:`stamen.models.sparse_layers` serve one large graph and its DP-SGD hooks, not batches of small
ones). No batch normalisation: its running statistics are state that weight averaging would mix
without meaning. Every weight is a parameter of this one module, so the FL algorithms average it
as they average a node classifier's.
"""

from __future__ import annotations

from torch import Tensor, nn
from torch_geometric.nn import GCNConv, GINConv, global_add_pool, global_mean_pool

from stamen.models.names import GRAPH_MODELS


class GraphClassifier(nn.Module):
    """See the module docstring: ``forward(x, edge_index, batch, num_graphs) -> (num_graphs, C)`` logits."""

    def __init__(self, name: str, in_dim: int, num_classes: int, hidden: int, num_layers: int, dropout: float) -> None:
        super().__init__()
        if name not in GRAPH_MODELS:
            raise ValueError(f"unknown graph classifier {name!r}; choose one of: {', '.join(GRAPH_MODELS)}")
        if num_layers < 1:
            raise ValueError(f"a graph classifier needs num-layers >= 1, got {num_layers}")
        widths = [in_dim] + [hidden] * num_layers
        self.layers = nn.ModuleList(
            gin_layer(a, b) if name == "gin" else GCNConv(a, b) for a, b in zip(widths, widths[1:], strict=False)
        )
        self.readout = global_add_pool if name == "gin" else global_mean_pool
        self.dropout = dropout
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        for layer in self.layers:
            x = nn.functional.relu(layer(x, edge_index))
        pooled = self.readout(x, batch, size=num_graphs)
        return self.head(nn.functional.dropout(pooled, self.dropout, self.training))


def gin_layer(in_dim: int, out_dim: int) -> GINConv:
    """A GIN layer (epsilon 0) whose MLP is Linear, ReLU, Linear."""
    return GINConv(nn.Sequential(nn.Linear(in_dim, out_dim), nn.ReLU(), nn.Linear(out_dim, out_dim)), train_eps=False)


def build_graph_classifier(
    name: str, in_dim: int, num_classes: int, hidden: int, num_layers: int, dropout: float
) -> GraphClassifier:
    """The run's graph classifier ``name`` (one of :data:`stamen.models.names.GRAPH_MODELS`)."""
    return GraphClassifier(name, in_dim, num_classes, hidden, num_layers, dropout)
