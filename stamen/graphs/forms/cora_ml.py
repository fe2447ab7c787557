"""``cora_ml``: the Cora-ML citation graph, ``<root>/npz/cora_ml.npz`` in a graph ``.npz`` layout
(:mod:`stamen.graphs.npz_graph`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stamen.graphs.names import DatasetSpec


def files(name: str, root: Path) -> list[Path]:
    """The file the reader reads."""
    return [root / "npz" / "cora_ml.npz"]


def read(name: str, root: Path, seed: int) -> Any:
    """The graph (see :class:`DatasetSpec`); ``seed`` is unused."""
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.npz_graph import read_npz_file

    return read_npz_file(name, root / "npz", "cora_ml.npz")


SPEC = DatasetSpec("cora_ml", "the Cora-ML citation graph (a file)", f"{__name__}:read", files=f"{__name__}:files")
