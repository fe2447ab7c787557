"""``tu:NAME``: a set of small graphs in the TU layout, ``<root>/NAME/raw/NAME_*.txt`` as PyG's ``TUDataset``
places it (:mod:`stamen.graphs.tu_folder`), for graph classification only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from stamen.graphs.names import DatasetSpec

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def check(name: str) -> str | None:
    """What is wrong with ``tu:NAME`` (see :class:`DatasetSpec`)."""
    if NAME.fullmatch(name.partition(":")[2]):
        return None
    return (
        f"dataset {name!r}: tu:NAME takes a TU dataset name (letters, digits, _ -; no folder) "
        "and reads <root>/NAME/raw/NAME_*.txt"
    )


def files(name: str, root: Path) -> list[Path]:
    """Every file of the set's name in its folder (its optional files too)."""
    stem = name.partition(":")[2]
    return sorted((root / stem / "raw").glob(f"{stem}_*.txt"))


def read(name: str, root: Path, seed: int) -> Any:
    """The graphs (see :class:`DatasetSpec`); ``seed`` is unused."""
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.tu_folder import read_tu_folder, tu_source

    return read_tu_folder(tu_source(name, root))


SPEC = DatasetSpec(
    "tu:",
    "a set of small graphs in the TU layout, <root>/NAME/raw/NAME_*.txt",
    f"{__name__}:read",
    graph_set=True,
    parameter="NAME",
    check=f"{__name__}:check",
    files=f"{__name__}:files",
)
