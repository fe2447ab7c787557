r"""First layers that read sparse node features: GCN's and GraphSAGE's convolutions, a linear map.

Each is its parent with the same parameters and the same function; it also accepts a
:class:`~stamen.models.sparse_product.SparseMatrix` :math:`\mathbf{X}` and then computes
:math:`\mathbf{X}\mathbf{W}^{\top}` as a sparse product. :class:`GCNLayer` also propagates with
:math:`\hat{\mathbf{A}}` normalised once per graph (:func:`~stamen.models.sparse_product.gcn_adjacency`):

.. math::
    \mathbf{X}' = \hat{\mathbf{A}}\,\mathbf{X}\mathbf{W}^{\top} + \mathbf{b}, \qquad
    \hat{\mathbf{A}} = \mathbf{D}^{-1/2}(\mathbf{A}+\mathbf{I})\mathbf{D}^{-1/2}.

:class:`SAGELayer` uses that the mean aggregation is linear, so it may follow the projection:

.. math::
    \mathbf{X}' = \mathbf{M}\,\mathbf{X}\mathbf{W}_l^{\top} + \mathbf{b}_l + \mathbf{X}\mathbf{W}_r^{\top},
    \qquad \mathbf{M}_{ij} = |\{j \to i\}| / \deg_{\mathrm{in}}(i),

which aggregates ``out_channels`` columns instead of ``in_channels``
(:func:`~stamen.models.sparse_product.mean_adjacency`).

:class:`~stamen.models.node_classifier.Encoder` hands a layer with ``takes_sparse = True`` its
input features as a sparse matrix where they are sparse enough.
"""

from __future__ import annotations

from torch import Tensor, nn
from torch_geometric.nn import GCNConv, SAGEConv

from stamen.models.sparse_product import SparseMatrix, gcn_adjacency, mean_adjacency


class GCNLayer(GCNConv):
    """``GCNConv(in_channels, out_channels)``, PyG's defaults (self-loops, symmetric normalisation, bias)."""

    takes_sparse = True

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(in_channels, out_channels)

    def forward(self, x: Tensor | SparseMatrix, edge_index: Tensor) -> Tensor:  # type: ignore[override]
        h = x @ self.lin.weight.t()  # sparse or dense x
        out = gcn_adjacency(edge_index, x.size(0), h.dtype) @ h
        return out + self.bias


class SAGELayer(SAGEConv):
    """``SAGEConv(in_channels, out_channels)``, PyG's defaults (mean aggregation, root weight, bias)."""

    takes_sparse = True

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(in_channels, out_channels)

    def forward(self, x: Tensor | SparseMatrix, edge_index: Tensor) -> Tensor:  # type: ignore[override]
        neighbours, root = x @ self.lin_l.weight.t(), x @ self.lin_r.weight.t()  # sparse or dense x
        return mean_adjacency(edge_index, x.size(0), root.dtype) @ neighbours + self.lin_l.bias + root


class LinearLayer(nn.Linear):
    """:class:`torch.nn.Linear` that also takes a sparse input."""

    takes_sparse = True

    def forward(self, x: Tensor | SparseMatrix) -> Tensor:  # type: ignore[override]
        if isinstance(x, Tensor):
            return super().forward(x)
        out = x @ self.weight.t()
        return out if self.bias is None else out + self.bias
