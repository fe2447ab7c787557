"""``cora``, ``citeseer``, ``pubmed``: the Planetoid citation graphs, read from
``<root>/Cora/raw/ind.cora.{x,tx,allx,y,ty,ally,graph,test.index}`` (``CiteSeer``, ``PubMed`` likewise) by
:mod:`stamen.graphs.planetoid` (raw pickles read as data, never unpickled with code).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stamen.graphs.names import DatasetSpec
from stamen.graphs.sources import Source, planetoid_source

FOLDERS = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}


def source(name: str, root: Path) -> Source:
    """The files of dataset ``name`` under data root ``root``."""
    return planetoid_source(name, root / FOLDERS[name] / "raw", name)


def files(name: str, root: Path) -> list[Path]:
    """The files the reader reads."""
    return list(source(name, root).paths)


def read(name: str, root: Path, seed: int) -> Any:
    """The graph (see :class:`DatasetSpec`); ``seed`` is unused."""
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.planetoid import read_planetoid

    where = source(name, root)
    where.require()
    return read_planetoid(where.folder, name, label=name)


SPECS = [
    DatasetSpec(name, f"Planetoid's {folder} citation graph (files)", f"{__name__}:read", files=f"{__name__}:files")
    for name, folder in FOLDERS.items()
]
