"""``ogb:ogbn-NAME``: an OGB node-property folder ``<root>/ogbn_NAME/raw/{edge,node-feat,node-label}.csv.gz``
(:mod:`stamen.graphs.ogb_folder`), read without the ``ogb`` package."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from stamen.graphs.names import DatasetSpec
from stamen.graphs.sources import Source

NAME = re.compile(r"ogbn-[A-Za-z0-9]{1,40}")
FILES = ("edge.csv.gz", "node-feat.csv.gz", "node-label.csv.gz")


def check(name: str) -> str | None:
    """What is wrong with ``ogb:ogbn-NAME`` (see :class:`DatasetSpec`)."""
    if NAME.fullmatch(name.partition(":")[2]):
        return None
    return f"dataset {name!r}: ogb: takes an OGB node-property dataset name such as ogbn-arxiv"


def source(name: str, root: Path) -> Source:
    """The files of ``name`` under data root ``root``."""
    return Source(name, root / name.partition(":")[2].replace("-", "_") / "raw", FILES)


def files(name: str, root: Path) -> list[Path]:
    """The files the reader reads."""
    return list(source(name, root).paths)


def read(name: str, root: Path, seed: int) -> Any:
    """The graph (see :class:`DatasetSpec`); ``seed`` is unused."""
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.ogb_folder import read_ogb_folder

    where = source(name, root)
    where.require()
    return read_ogb_folder(where.folder, name)


SPEC = DatasetSpec(
    "ogb:",
    "an OGB node-property folder, <root>/ogbn_NAME/raw/*.csv.gz",
    f"{__name__}:read",
    parameter="ogbn-NAME",
    check=f"{__name__}:check",
    files=f"{__name__}:files",
)
