"""Where each dataset's files lie under the data root, and which reader reads them.

Torch-free, so the file list of a dataset can be named (in an error, a help text)
without loading anything. Every path is the data root joined with names checked by
:func:`stamen.graphs.names.dataset_problem` (no ``/``, no ``..``), so a dataset name never
reaches outside the root.

Files to place (``<root>`` is ``data-root`` or ``$STAMEN_DATA``), and the reader:

- ``cora``, ``citeseer``, ``pubmed``: ``<root>/Cora/raw/ind.cora.{x,tx,allx,y,ty,ally,graph,test.index}``
  (``CiteSeer``, ``PubMed`` likewise), Planetoid;
- ``cora_ml``: ``<root>/npz/cora_ml.npz``; ``npz:<stem>``: ``<root>/npz/<stem>.npz``, npz;
- ``pyg:Amazon/Computers``: ``<root>/Amazon/Computers/raw/amazon_electronics_computers.npz``
  (``Photo``: ``amazon_electronics_photo.npz``), npz;
- ``pyg:Coauthor/CS``: ``<root>/Coauthor/CS/raw/ms_academic_cs.npz`` (``Physics``:
  ``ms_academic_phy.npz``), npz;
- ``pyg:CitationFull/<Name>``: ``<root>/CitationFull/<name>/raw/<name>.npz``, ``<name>`` in
  lower case (``cora_ml``, ``dblp``, ...), npz;
- ``pyg:Planetoid/<Name>``: ``<root>/Planetoid/<Name>/raw/ind.<name>.*``, Planetoid;
- ``pyg:WikiCS``: ``<root>/WikiCS/raw/data.json``, WikiCS;
- ``ogb:ogbn-<name>``: ``<root>/ogbn_<name>/raw/{edge,node-feat,node-label}.csv.gz``, OGB;
- ``tu:<NAME>``: ``<root>/<NAME>/raw/<NAME>_{A,graph_indicator,graph_labels}.txt``, TU (a graph set:
  :mod:`stamen.graphs.tu_folder`, located there, not by :func:`locate`).

The ``pyg:`` folders are PyG's own ``raw/`` folders (``Amazon(root='<root>/Amazon', name=...)``
and so on), so a root that PyG once filled can be pointed at directly; its ``processed/``
files are never opened. The npz datasets of PyG are read as PyG reads them, with features
made binary (``x > 0``).
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

from stamen.graphs.names import PLANETOID, dataset_problem, is_graph_set

PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
PYG_NPZ_FILES = {
    ("Amazon", "Computers"): "amazon_electronics_computers.npz",
    ("Amazon", "Photo"): "amazon_electronics_photo.npz",
    ("Coauthor", "CS"): "ms_academic_cs.npz",
    ("Coauthor", "Physics"): "ms_academic_phy.npz",
}
OGB_FILES = ("edge.csv.gz", "node-feat.csv.gz", "node-label.csv.gz")


class Layout(enum.Enum):
    """How a dataset's files are laid out, which picks its reader."""

    GENERATED = "generated"  # csbm: no files
    PLANETOID = "planetoid"  # stamen.graphs.planetoid
    NPZ = "npz"  # stamen.graphs.npz_graph
    WIKICS = "wikics"  # stamen.graphs.wikics
    OGB = "ogb"  # stamen.graphs.ogb_folder
    TU = "tu"  # stamen.graphs.tu_folder: a set of small graphs (stamen.graphs.graph_federation reads it)


@dataclass(frozen=True)
class Source:
    """A dataset's reader, its folder and the files that must be in it."""

    name: str
    layout: Layout
    folder: Path | None = None
    files: tuple[str, ...] = ()
    binary_features: bool = False  # PyG's npz datasets: features made 0/1
    planetoid: str = ""  # the Planetoid file prefix (``cora`` for ind.cora.*)

    @property
    def paths(self) -> tuple[Path, ...]:
        assert self.folder is not None
        return tuple(self.folder / file for file in self.files)

    def missing(self) -> list[str]:
        """The required files that are not there."""
        return [path.name for path in self.paths if not path.is_file()]

    def missing_message(self, missing: list[str]) -> str:
        """``dataset 'X': raw files missing: place a, b under <folder>/ (Stamen never downloads)``; a name that
        is there but is no regular file (a folder, a FIFO, a device, a broken or looping link) is said so."""
        assert self.folder is not None
        odd = [name for name in missing if os.path.lexists(self.folder / name)]
        if odd:
            return (
                f"dataset {self.name!r}: {self.folder / odd[0]} is not a regular file (a folder, FIFO, device or "
                "broken link), so it is not read; put the file itself there"
            )
        return (
            f"dataset {self.name!r}: raw files missing: place {', '.join(missing)} under {self.folder}/ "
            "(Stamen never downloads)"
        )


def locate(name: str, root: Path | None) -> Source:
    """The :class:`Source` of dataset ``name`` under ``root``.

    Raises:
        ValueError: ``name`` is not a dataset (one line, from :func:`stamen.graphs.names.dataset_problem`).
        FileNotFoundError: a file dataset without a data root.
    """
    problem = dataset_problem(name)
    if problem:
        raise ValueError(problem)
    if is_graph_set(name):
        raise ValueError(
            f"dataset {name!r} is a set of small graphs, read by task='graph-classification' only; "
            "give a single-graph dataset such as csbm or cora"
        )
    if name == "csbm":
        return Source(name, Layout.GENERATED)
    if root is None:
        raise FileNotFoundError(
            f"dataset {name!r} needs a data root: set the run-config key data-root "
            "(stamen run -c \"data-root='/data'\"), the option --data-root of stamen certify, partition, audit "
            "and bench, or the environment variable STAMEN_DATA"
        )
    prefix, _, rest = name.partition(":")
    if name in PLANETOID:
        return _planetoid(name, root / PLANETOID[name] / "raw", name)
    if name == "cora_ml":
        return Source(name, Layout.NPZ, root / "npz", ("cora_ml.npz",))
    if prefix == "npz":
        return Source(name, Layout.NPZ, root / "npz", (f"{rest}.npz",))
    if prefix == "ogb":
        return Source(name, Layout.OGB, root / rest.replace("-", "_") / "raw", OGB_FILES)
    cls, _, sub = rest.partition("/")
    if cls == "WikiCS":
        return Source(name, Layout.WIKICS, root / "WikiCS" / "raw", ("data.json",))
    if cls == "Planetoid":
        return _planetoid(name, root / "Planetoid" / sub / "raw", sub.lower())
    if cls == "CitationFull":
        return Source(name, Layout.NPZ, root / "CitationFull" / sub.lower() / "raw", (f"{sub.lower()}.npz",), True)
    return Source(name, Layout.NPZ, root / cls / sub / "raw", (PYG_NPZ_FILES[cls, sub],), True)


def _planetoid(name: str, folder: Path, key: str) -> Source:
    return Source(name, Layout.PLANETOID, folder, tuple(f"ind.{key}.{part}" for part in PLANETOID_PARTS), planetoid=key)
