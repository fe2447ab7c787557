r"""``graphs-synth``: a set of small graphs whose class is in their structure, generated from a seed.

Graph classification's embedded dataset (no files), as ``csbm`` is node classification's.
Graph :math:`g` of :math:`G` has :math:`n_g \sim \mathcal{U}\{10, \dots, 30\}` nodes and a class
:math:`y_g \in \{0, 1\}`, the classes dealt out evenly (:math:`\lceil G/2 \rceil` and
:math:`\lfloor G/2 \rfloor` graphs) in a seeded order:

- every graph starts as an Erdős–Rényi graph :math:`G(n_g, p_g)` with mean degree
  :math:`p_g (n_g - 1) \sim \mathcal{U}[1.5, 3]`, drawn per graph so that density alone does not
  tell the classes apart;
- a class-1 graph also has a planted clique on :math:`k_g \sim \mathcal{U}\{5, 6, 7\}` of its nodes
  (random ones): a dense spot that the sparse random graphs almost never have (the expected
  number of 5-cliques in :math:`G(n, p)`, :math:`\binom{n}{5} p^{10}`, is below 0.005 for every
  :math:`n` and :math:`p` here; largest at :math:`n = 10`, :math:`p = 1/3`).

Node features (:data:`NUM_FEATURES` columns) carry no class signal of their own: a one-hot of the
node's degree capped at :data:`MAX_DEGREE` (as GIN's papers feed featureless graphs) and
:data:`NOISE_FEATURES` standard-normal columns. A model must read the structure, through
message passing and a readout, to beat chance (0.5).

The same seed gives the same graphs, in the same order, on every machine (numpy's PCG64).
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data

NUM_GRAPHS = 400
NUM_CLASSES = 2
MIN_NODES, MAX_NODES = 10, 30
MAX_DEGREE = 9  # degree features: one-hot of min(degree, MAX_DEGREE)
NOISE_FEATURES = 6
NUM_FEATURES = MAX_DEGREE + 1 + NOISE_FEATURES


def make_graph_set(seed: int = 0, num_graphs: int = NUM_GRAPHS) -> list[Data]:
    """``num_graphs`` graphs (``x``, undirected ``edge_index``, ``y`` of shape ``(1,)``), see the module docstring."""
    if num_graphs < NUM_CLASSES:
        raise ValueError(f"graphs-synth needs at least {NUM_CLASSES} graphs, got {num_graphs}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(num_graphs) % NUM_CLASSES)
    return [_graph(rng, int(label)) for label in labels]


def _graph(rng: np.random.Generator, label: int) -> Data:
    n = int(rng.integers(MIN_NODES, MAX_NODES + 1))
    p = float(rng.uniform(1.5, 3.0)) / (n - 1)
    upper = np.triu(rng.random((n, n)) < p, k=1)
    if label == 1:
        members = rng.choice(n, size=int(rng.integers(5, 8)), replace=False)
        upper[np.ix_(members, members)] = True
        upper = np.triu(upper, k=1)
    adjacency = upper | upper.T
    rows, cols = np.nonzero(adjacency)
    degree = np.minimum(adjacency.sum(axis=1), MAX_DEGREE)
    x = np.zeros((n, NUM_FEATURES), dtype=np.float32)
    x[np.arange(n), degree] = 1.0
    x[:, MAX_DEGREE + 1 :] = rng.standard_normal((n, NOISE_FEATURES)).astype(np.float32)
    return Data(
        x=torch.from_numpy(x),
        edge_index=torch.from_numpy(np.stack([rows, cols]).astype(np.int64)),
        y=torch.tensor([label], dtype=torch.long),
        num_nodes=n,
    )
