"""``label-dirichlet``: each class's items shared among the clients by proportions drawn from ``Dirichlet(alpha)``.

Small ``alpha`` gives skewed label distributions, large ``alpha`` near-uniform ones. It ignores structure,
so on one graph it cuts many edges; it needs labels only, so it shares out a graph set's graphs too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stamen.graphs.names import PartitionerSpec


def partition(data: Any, num_parts: int, seed: int, alpha: float) -> list[np.ndarray]:
    """K arrays of item ids (see :class:`stamen.graphs.names.PartitionerSpec`)."""
    if alpha <= 0:
        raise ValueError(f"label-dirichlet needs alpha > 0, got {alpha}")
    return _label_dirichlet(data, num_parts, seed, alpha)


def _label_dirichlet(data: Any, num_parts: int, seed: int, alpha: float) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = data.y.numpy()
    parts: list[list[np.ndarray]] = [[] for _ in range(num_parts)]
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        shares = rng.dirichlet(np.full(num_parts, alpha))
        cuts = (np.cumsum(shares)[:-1] * members.size).astype(np.int64)
        for i, piece in enumerate(np.split(members, cuts)):
            parts[i].append(piece)
    return [np.concatenate(p) for p in parts]


SPEC = PartitionerSpec(
    "label-dirichlet",
    "each class shared among the clients by Dirichlet(dirichlet-alpha) proportions (label skew)",
    function=f"{__name__}:partition",
    graphs=True,
)
