r"""GraphSAGE as PyG's ``GraphSAGE(in, hidden, num_layers=2, out_channels=out, dropout=p)``, reading sparse features.

Two mean-aggregating GraphSAGE layers with ReLU and dropout between them and none after the
second,

.. math::
    \mathbf{H} = \mathrm{dropout}_p\big(\mathrm{ReLU}(\mathbf{M}\mathbf{X}\mathbf{W}_{l,1}^{\top} + \mathbf{b}_1
    + \mathbf{X}\mathbf{W}_{r,1}^{\top})\big), \qquad
    \mathbf{Z} = \mathbf{M}\mathbf{H}\mathbf{W}_{l,2}^{\top} + \mathbf{b}_2 + \mathbf{H}\mathbf{W}_{r,2}^{\top},

with :math:`\mathbf{M}` the mean over in-neighbours. The parameters are PyG's, under the same
names (``convs.0.lin_l.weight`` ...), drawn in the same order: a model seeded alike starts
from the same weights. The layers are :class:`~stamen.models.sparse_layers.SAGELayer`: each projects
before it aggregates, and the first multiplies node features that are sparse enough (bag-of-
words: about 1% non-zero on Cora) as a sparse matrix
(:func:`~stamen.models.sparse_product.sparse_features`), where PyG aggregates and multiplies every
one of the :math:`F` dense columns. The same function; sums in another order, so results
agree with PyG's to rounding, not to the bit.

On nodes whose only edge is a self-loop (:meth:`SAGEEncoder.isolated`: FedLoG's synthetic
nodes) the mean over in-neighbours is the node itself, so each layer is one product,
:math:`\mathbf{X}(\mathbf{W}_l + \mathbf{W}_r)^{\top} + \mathbf{b}`, where the graph's form takes two.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from stamen.models.sparse_layers import SAGELayer
from stamen.models.sparse_product import sparse_features


class SAGEEncoder(nn.Module):
    """Two :class:`~stamen.models.sparse_layers.SAGELayer` s, ``in_dim -> hidden -> out_dim``; ReLU, dropout between."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.convs = nn.ModuleList([SAGELayer(in_dim, hidden), SAGELayer(hidden, out_dim)])
        self.dropout = dropout

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        features = sparse_features(x)  # None for dense features or features that need a gradient
        h = torch.relu(self.convs[0](features if features is not None else x, edge_index))
        h = nn.functional.dropout(h, self.dropout, self.training)
        return self.convs[1](h, edge_index)

    def isolated(self, x: Tensor) -> Tensor:
        """``forward`` on nodes that each have a self-loop as their only edge."""
        first, second = self.convs
        h = torch.relu(nn.functional.linear(x, first.lin_l.weight + first.lin_r.weight, first.lin_l.bias))
        h = nn.functional.dropout(h, self.dropout, self.training)
        return nn.functional.linear(h, second.lin_l.weight + second.lin_r.weight, second.lin_l.bias)
