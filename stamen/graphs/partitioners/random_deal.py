"""``random``: a seeded random permutation dealt into K parts of sizes differing by at most one (structure and
labels ignored: the i.i.d. baseline); it shares out a graph set's graphs too."""

from __future__ import annotations

from typing import Any

import numpy as np

from stamen.graphs.names import PartitionerSpec


def partition(data: Any, num_parts: int, seed: int, alpha: float) -> list[np.ndarray]:
    """K arrays of item ids (see :class:`stamen.graphs.names.PartitionerSpec`)."""
    return np.array_split(np.random.default_rng(seed).permutation(int(data.num_nodes)), num_parts)


SPEC = PartitionerSpec(
    "random", "a seeded random deal into K equal parts (the i.i.d. baseline)", function=f"{__name__}:partition",
    graphs=True,
)  # fmt: skip
