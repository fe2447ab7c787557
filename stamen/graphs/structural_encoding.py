r"""FedStar's structural embedding of a graph's nodes: random-walk landing probabilities and a one-hot degree.

Tan, Liu, Long, Jiang and Zhang, *Federated Learning on Non-IID Graphs via Structural Knowledge
Sharing*, AAAI 2023 (code: github.com/yuetan031/FedStar, ``init_structure_encoding``, type ``rw_dg``).
For a graph with adjacency :math:`\mathbf{A}` and degrees :math:`d_j`, node :math:`i`'s embedding is

.. math:: \mathbf{s}_i = \big[\, (\mathbf{M})_{ii}, (\mathbf{M}^2)_{ii}, \dots, (\mathbf{M}^{k})_{ii}
   \;\big|\; \mathrm{onehot}_{m}(\min(\max(d_i, 1), m)) \,\big], \qquad \mathbf{M} = \mathbf{A}\mathbf{D}^{-1},

the random-walk structural embedding (RWSE: the probability that a random walk from :math:`i`
is back at :math:`i` after :math:`1..k` steps) of length :math:`k` beside the degree structural
embedding (DSE: a one-hot of the degree over :math:`m` columns, degree 0 and 1 in the first,
degrees of :math:`m` and above in the last). Both read the structure alone: no feature, no seed,
so a graph's embedding is the same on every client, engine and run. A node with no edge walks
nowhere: its landing probabilities are 0, as in the authors' code (their :math:`1/0` is an infinite entry of
:math:`\mathbf{D}^{-1}` that the sparse product never reaches).

A batch of graphs is one disconnected graph, and a walk never leaves its graph, so the embedding
of the batch is that of each graph, row for row: :func:`structural_encoding` takes either.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import torch


def structural_encoding(edge_index: torch.Tensor, num_nodes: int, rw_length: int, degree_length: int) -> torch.Tensor:
    """The ``(num_nodes, rw_length + degree_length)`` float32 embeddings of a graph's (or a batch's) nodes
    (see the module docstring); ``edge_index`` holds both directions of every undirected edge."""
    if rw_length < 1 or degree_length < 1:
        raise ValueError(f"structural embedding lengths must be >= 1, got {rw_length} and {degree_length}")
    rows, cols = edge_index.cpu().numpy()
    adjacency = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(num_nodes, num_nodes))
    degree = np.bincount(rows, minlength=num_nodes).astype(np.float64)
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    step = (adjacency @ sp.diags(inverse)).tocsr()
    landing = np.empty((num_nodes, rw_length))
    power = step
    for k in range(rw_length):
        if k:
            power = (power @ step).tocsr()
        landing[:, k] = power.diagonal()
    onehot = np.zeros((num_nodes, degree_length))
    onehot[np.arange(num_nodes), np.clip(degree.astype(np.int64), 1, degree_length) - 1] = 1.0
    return torch.from_numpy(np.concatenate([landing, onehot], axis=1).astype(np.float32))
