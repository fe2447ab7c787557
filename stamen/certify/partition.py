"""Seeded random split of the labelled nodes among federated clients (certify's own).

Used by ``stamen certify --clients K`` when ``stamen.graphs.partition`` is not available:
:func:`random_label_split` shuffles the labelled nodes with ``seed`` and deals them
round-robin, so client sizes differ by at most one.
"""

from __future__ import annotations

import numpy as np


def random_label_split(num_labeled: int, num_clients: int, seed: int = 0) -> np.ndarray:
    """Client id (``0..num_clients-1``) of each labelled position ``0..num_labeled-1``."""
    if num_clients < 1:
        raise ValueError(f"--clients must be >= 1, got {num_clients}")
    if num_clients > num_labeled:
        raise ValueError(f"--clients {num_clients} exceeds the {num_labeled} labelled nodes")
    rng = np.random.default_rng(seed)
    owner = np.empty(num_labeled, dtype=np.int64)
    owner[rng.permutation(num_labeled)] = np.arange(num_labeled) % num_clients
    return owner
