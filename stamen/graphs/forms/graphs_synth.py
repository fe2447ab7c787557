"""``graphs-synth``: a set of small graphs generated from the run's seed (:mod:`stamen.graphs.graph_sets`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stamen.graphs.names import DatasetSpec


def read(name: str, root: Path | None, seed: int) -> Any:
    """The graphs of ``seed`` (see :class:`DatasetSpec`)."""
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.graph_sets import make_graph_set

    return make_graph_set(seed)


SPEC = DatasetSpec("graphs-synth", "a set of small graphs generated from the seed", f"{__name__}:read", graph_set=True)
