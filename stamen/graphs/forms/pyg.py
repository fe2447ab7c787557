"""``pyg:CLASS/NAME`` (``pyg:WikiCS`` without a name): the raw files of a PyG dataset class, read by Stamen's
own readers. Only the classes of :data:`CLASSES` are accepted: those whose raw files are data Stamen can read
without PyG's processing, which would unpickle its processed ``.pt`` files. The files:

- ``pyg:Amazon/Computers``: ``<root>/Amazon/Computers/raw/amazon_electronics_computers.npz``
  (``Photo``: ``amazon_electronics_photo.npz``), npz;
- ``pyg:Coauthor/CS``: ``<root>/Coauthor/CS/raw/ms_academic_cs.npz`` (``Physics``: ``ms_academic_phy.npz``), npz;
- ``pyg:CitationFull/<Name>``: ``<root>/CitationFull/<name>/raw/<name>.npz``, ``<name>`` in lower case, npz;
- ``pyg:Planetoid/<Name>``: ``<root>/Planetoid/<Name>/raw/ind.<name>.*``, Planetoid;
- ``pyg:WikiCS``: ``<root>/WikiCS/raw/data.json`` (:mod:`stamen.graphs.wikics`).

The folders are PyG's own ``raw/`` folders. The npz datasets of PyG are read as PyG reads them, with
features made binary (``x > 0``).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from stamen.graphs.names import DatasetSpec
from stamen.graphs.sources import Source, planetoid_source

# PyG class -> its dataset names (empty: the class holds one dataset and takes no name).
CLASSES: dict[str, tuple[str, ...]] = {
    "Amazon": ("Computers", "Photo"),
    "Coauthor": ("CS", "Physics"),
    "CitationFull": ("Cora", "Cora_ML", "CiteSeer", "DBLP", "PubMed"),
    "Planetoid": ("Cora", "CiteSeer", "PubMed"),
    "WikiCS": (),
}
NPZ_FILES = {
    ("Amazon", "Computers"): "amazon_electronics_computers.npz",
    ("Amazon", "Photo"): "amazon_electronics_photo.npz",
    ("Coauthor", "CS"): "ms_academic_cs.npz",
    ("Coauthor", "Physics"): "ms_academic_phy.npz",
}


def pyg_datasets() -> list[str]:
    """Every accepted ``pyg:`` dataset, as written in a run config."""
    return [f"pyg:{cls}/{name}" if name else f"pyg:{cls}" for cls, names in CLASSES.items() for name in names or ("",)]


def check(name: str) -> str | None:
    """What is wrong with ``pyg:CLASS/NAME`` (see :class:`DatasetSpec`)."""
    cls, slash, sub = name.partition(":")[2].partition("/")
    if cls in CLASSES and ((not CLASSES[cls] and not slash) or sub in CLASSES[cls]):
        return None
    close = difflib.get_close_matches(name, pyg_datasets(), n=1, cutoff=0.6)
    return (
        f"unknown dataset {name!r}; Stamen reads the raw files of these PyG datasets only: "
        f"{', '.join(pyg_datasets())}{f'; did you mean {close[0]!r}?' if close else ''}"
    )


def source(name: str, root: Path) -> Source:
    """The files of ``name`` under data root ``root``."""
    cls, _, sub = name.partition(":")[2].partition("/")
    if cls == "WikiCS":
        return Source(name, root / "WikiCS" / "raw", ("data.json",))
    if cls == "Planetoid":
        return planetoid_source(name, root / "Planetoid" / sub / "raw", sub.lower())
    if cls == "CitationFull":
        return Source(name, root / "CitationFull" / sub.lower() / "raw", (f"{sub.lower()}.npz",))
    return Source(name, root / cls / sub / "raw", (NPZ_FILES[cls, sub],))


def files(name: str, root: Path) -> list[Path]:
    """The files the reader reads."""
    return list(source(name, root).paths)


def read(name: str, root: Path, seed: int) -> Any:
    """The graph (see :class:`DatasetSpec`); ``seed`` is unused."""
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.npz_graph import read_npz_file

    where = source(name, root)
    cls, _, sub = name.partition(":")[2].partition("/")
    if cls not in ("WikiCS", "Planetoid"):
        return read_npz_file(name, where.folder, where.files[0], binary_features=True)
    where.require()
    if cls == "WikiCS":
        # on use: torch, numpy stay out of the registry's import (every process loads the specs)
        from stamen.graphs.wikics import read_wikics

        return read_wikics(where.paths[0], name)
    # on use: torch, numpy stay out of the registry's import (every process loads the specs)
    from stamen.graphs.planetoid import read_planetoid

    return read_planetoid(where.folder, sub.lower(), label=name)


SPEC = DatasetSpec(
    "pyg:",
    "the raw files of a PyG dataset class, <root>/CLASS/NAME/raw/",
    f"{__name__}:read",
    parameter="CLASS/NAME",
    check=f"{__name__}:check",
    files=f"{__name__}:files",
    listed="pyg:CLASS/NAME ({})".format(
        ", ".join(f"{cls}/{'|'.join(names)}" if names else cls for cls, names in CLASSES.items())
    ),
)
