r"""A node-feature matrix given as two row blocks: a graph's own nodes, then nodes added to it.

FedSage's mended graph (:mod:`stamen.algorithms.fedsage.model`) is a client's subgraph with generated
neighbours joined to it: its feature matrix stacks the nodes' own features
:math:`\mathbf{X}` (on Cora, bag-of-words: 1.3% non-zero) on the generated ones
:math:`\hat{\mathbf{X}}` (fGen's outputs: every entry non-zero),

.. math::
    \mathbf{X}_{\mathrm{m}} = \begin{bmatrix} \mathbf{X} \\ \hat{\mathbf{X}} \end{bmatrix}, \qquad
    \mathbf{X}_{\mathrm{m}} \mathbf{W} = [\mathbf{X}\mathbf{W};\ \hat{\mathbf{X}}\mathbf{W}].

Stacked into one dense tensor, the first layer's product and its gradient are dense over
every row, and input dropout draws for every entry of the real rows, where Stamen's other
algorithms take the sparse product and draw for the non-zero entries only
(:mod:`stamen.models.feature_dropout`, :mod:`stamen.models.sparse_product`). :class:`StackedRows` keeps the
blocks apart, so the first layer multiplies each block in its own form.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from stamen.models.sparse_product import SparseMatrix


@dataclass(frozen=True, eq=False)
class StackedRows:
    """``[top; bottom]`` without stacking: ``top`` the graph's own rows (dense, or sparse as the
    first layer reads them), ``bottom`` the added rows (dense). ``rows @ B`` multiplies block by block."""

    top: Tensor | SparseMatrix
    bottom: Tensor

    def size(self, dim: int) -> int:
        if dim == 0:
            return self.top.size(0) + self.bottom.size(0)
        return self.bottom.size(1)

    def with_top(self, top: Tensor | SparseMatrix) -> StackedRows:
        return StackedRows(top, self.bottom)

    def __matmul__(self, dense: Tensor) -> Tensor:
        return torch.cat([self.top @ dense, self.bottom @ dense])

    def dense(self) -> Tensor:
        """The stacked matrix as one dense tensor."""
        top = self.top.csr.to_dense() if isinstance(self.top, SparseMatrix) else self.top
        return torch.cat([top, self.bottom.to(top.dtype)])
