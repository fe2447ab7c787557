r"""FedStar's graph classifier: a feature branch and a structure branch, combined per layer and at the readout.

Tan et al., AAAI 2023 (code: github.com/yuetan031/FedStar, ``GIN_dc``). A node's input is its
features :math:`\mathbf{x}_i` beside its structural embedding :math:`\mathbf{s}_i`
(:mod:`stamen.graphs.structural_encoding`), given as one row :math:`[\mathbf{x}_i \mid \mathbf{s}_i]`
(the first ``in_dim`` columns are the features). With width :math:`h` and :math:`L` layers:

.. math::
    \mathbf{h}^0 = \mathbf{W}_x \mathbf{x}, \qquad \mathbf{s}^0 = \mathbf{W}_s \mathbf{s}, \\
    \mathbf{h}^{l} = \mathrm{ReLU}\big(\mathrm{conv}_l([\mathbf{h}^{l-1} \mid \mathbf{s}^{l-1}])\big), \qquad
    \mathbf{s}^{l} = \tanh\big(\mathrm{GCN}_l(\mathbf{s}^{l-1})\big), \\
    \mathbf{z} = \mathrm{readout}\big(\mathbf{W}_c [\mathbf{h}^L \mid \mathbf{s}^L]\big), \qquad
    \mathrm{logits} = \mathrm{head}(\mathrm{dropout}(\mathbf{z})),

``conv`` the run's model (GIN with a two-layer MLP and a sum readout, or GCN with a mean readout,
as :mod:`stamen.tasks.graph_classification.model`). The **structure encoder** (:math:`\mathbf{W}_s` and the GCN
layers over the structural embeddings, state-dict keys ``structure.*``) reads no feature, so it
means the same on every client: FedStar shares it (FedAvg), while the feature branch
(:math:`\mathbf{W}_x`, the convs over features and structure, :math:`\mathbf{W}_c`) and the head
stay with each client.

Differences from the authors' model: Stamen's graph classifiers end in one linear head after the
readout with dropout before it; the authors' add a hidden layer (``post``) and dropout after every
layer. This one follows Stamen's, so FedStar differs from the other algorithms' model only by the
structure branch.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn import GCNConv, global_add_pool, global_mean_pool

from stamen.models.names import GRAPH_MODELS
from stamen.tasks.graph_classification.model import gin_layer

STRUCTURE = "structure."  # the state-dict key prefix of the shared structure encoder


class StructureEncoder(nn.Module):
    """:math:`\\mathbf{W}_s` and the GCN layers over the structural embeddings (the shared part)."""

    def __init__(self, structure_dim: int, hidden: int, num_layers: int) -> None:
        super().__init__()
        self.embed = nn.Linear(structure_dim, hidden)
        self.layers = nn.ModuleList(GCNConv(hidden, hidden) for _ in range(num_layers))


class FedStarClassifier(nn.Module):
    """See the module docstring: ``forward([x | s], edge_index, batch, num_graphs) -> (num_graphs, C)`` logits."""

    def __init__(
        self, name: str, in_dim: int, structure_dim: int, num_classes: int, hidden: int, num_layers: int,
        dropout: float,
    ) -> None:  # fmt: skip
        super().__init__()
        if name not in GRAPH_MODELS:
            raise ValueError(f"unknown graph classifier {name!r}; choose one of: {', '.join(GRAPH_MODELS)}")
        if num_layers < 1:
            raise ValueError(f"a graph classifier needs num-layers >= 1, got {num_layers}")
        self.in_dim = in_dim
        self.structure = StructureEncoder(structure_dim, hidden, num_layers)
        self.features = nn.Linear(in_dim, hidden)
        self.layers = nn.ModuleList(
            gin_layer(2 * hidden, hidden) if name == "gin" else GCNConv(2 * hidden, hidden) for _ in range(num_layers)
        )
        self.combine = nn.Linear(2 * hidden, hidden)
        self.readout = global_add_pool if name == "gin" else global_mean_pool
        self.dropout = dropout
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor, num_graphs: int) -> Tensor:
        h = self.features(x[:, : self.in_dim])
        s = self.structure.embed(x[:, self.in_dim :])
        for layer, structure_layer in zip(self.layers, self.structure.layers, strict=True):
            h = nn.functional.relu(layer(torch.cat((h, s), dim=-1), edge_index))
            s = torch.tanh(structure_layer(s, edge_index))
        pooled = self.readout(self.combine(torch.cat((h, s), dim=-1)), batch, size=num_graphs)
        return self.head(nn.functional.dropout(pooled, self.dropout, self.training))


def split_state(model: nn.Module) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The shared (structure encoder) and the local entries of ``model``'s state dict, detached."""
    shared, local = {}, {}
    for key, value in model.state_dict().items():
        (shared if key.startswith(STRUCTURE) else local)[key] = value.detach()
    return shared, local
