"""``csbm``: a contextual stochastic block model generated from the run's seed (:mod:`stamen.graphs.csbm`).

No files: its size comes from the run config's ``csbm-*`` keys, which the size pre-flight reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stamen.graphs.names import DatasetSpec


def read(name: str, root: Path | None, seed: int, **options: float | int) -> Any:
    """The generated graph of ``seed`` and the generator's ``options`` (see :class:`DatasetSpec`)."""
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.csbm import make_csbm

    return make_csbm(seed=seed, **options)


SPEC = DatasetSpec("csbm", "a contextual stochastic block model generated from the seed", reader=f"{__name__}:read")
