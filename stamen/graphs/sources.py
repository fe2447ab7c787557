"""Where a dataset's files lie under the data root: :class:`Source`, a folder and the files that must be in it.

Torch-free, so the file list of a dataset can be named (in an error, a help text, the size pre-flight)
without loading anything. Every path is the data root joined with names checked by the dataset form's
``check`` (:func:`stamen.graphs.names.dataset_problem`: no ``/``, no ``..``), so a dataset name never
reaches outside the root. Each built-in's files and reader: its module in :mod:`stamen.graphs.forms`
(the files to place, for every form: docs/datasets.md).

The ``pyg:`` folders are PyG's own ``raw/`` folders (``Amazon(root='<root>/Amazon', name=...)``
and so on), so a root that PyG once filled can be pointed at directly; its ``processed/``
files are never opened.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


@dataclass(frozen=True)
class Source:
    """A dataset's folder and the files that must be in it (``name``: the dataset, for messages)."""

    name: str
    folder: Path
    files: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[Path, ...]:
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

    def require(self) -> None:
        """FileNotFoundError in one line naming the required files that are not there."""
        missing = self.missing()
        if missing:
            raise FileNotFoundError(self.missing_message(missing))


def planetoid_source(name: str, folder: Path, key: str) -> Source:
    """The Planetoid files ``ind.<key>.{x,tx,...}`` of dataset ``name`` in ``folder``."""
    return Source(name, folder, tuple(f"ind.{key}.{part}" for part in PLANETOID_PARTS))
