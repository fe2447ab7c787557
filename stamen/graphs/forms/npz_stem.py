"""``npz:STEM``: ``<root>/npz/STEM.npz`` in a graph ``.npz`` layout (:mod:`stamen.graphs.npz_graph`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from stamen.graphs.names import DatasetSpec

STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def check(name: str) -> str | None:
    """What is wrong with ``npz:STEM`` (see :class:`DatasetSpec`)."""
    rest = name.partition(":")[2]
    if STEM.fullmatch(rest) and not rest.endswith(".npz"):
        return None
    return (
        f"dataset {name!r}: npz:STEM takes a file stem (letters, digits, _ . -; no folder, no .npz) "
        "and reads <root>/npz/STEM.npz"
    )


def files(name: str, root: Path) -> list[Path]:
    """The file the reader reads."""
    return [root / "npz" / f"{name.partition(':')[2]}.npz"]


def read(name: str, root: Path, seed: int) -> Any:
    """The graph (see :class:`DatasetSpec`); ``seed`` is unused."""
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.npz_graph import read_npz_file

    return read_npz_file(name, root / "npz", f"{name.partition(':')[2]}.npz")


SPEC = DatasetSpec(
    "npz:",
    "a graph in the .npz layout, <root>/npz/STEM.npz",
    f"{__name__}:read",
    parameter="STEM",
    check=f"{__name__}:check",
    files=f"{__name__}:files",
)
