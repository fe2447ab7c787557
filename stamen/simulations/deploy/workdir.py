"""Folders Stamen's deployment commands write into, and what they may remove there.

A user's folder is never deleted. ``stamen deploy local --workdir DIR`` takes DIR when

- it does not exist, or is an empty folder: Stamen creates it (if needed) and writes
  the marker file :data:`MARKER` into it;
- it holds that marker (a regular file) from an earlier Stamen run: Stamen then
  removes only the entries it creates itself (:data:`OWNED`), never anything else
  there, and never follows a symbolic link (a link among them is removed as a link).

Every check runs before anything is removed or written; a refusal is one line saying
what to do. A workdir has one deployment at a time (:func:`held_workdir`: its lock,
:mod:`stamen.server.runlock`, is taken before the checks and held until the deployment ends), so a
second ``stamen deploy local`` on the same workdir, the default one of two terminals
included, is refused naming the first instead of deleting its certificates and state.
Output folders of ``deploy partition`` and ``deploy certs`` go through
:func:`check_output_folder`: absent or a real folder, never a file or a link.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from stamen.server.runlock import FolderLock

MARKER = ".stamen-deploy-workdir"
MARKER_TEXT = "This folder was created by `stamen deploy local`; it may remove what it wrote here.\n"
STATE = "superlink-state.db"
# What LocalDeployment writes: the SuperLink's SQLite state comes with its write-ahead log and index, which
# go with it (SQLite would read a log left behind as part of the next run's new database).
OWNED = ("certs", "data", "hosts", "logs", "operator", STATE, f"{STATE}-wal", f"{STATE}-shm", f"{STATE}-journal")


def check_output_folder(path: Path, what: str) -> Path:
    """``path`` if it is absent or a real folder; otherwise ValueError naming the problem."""
    path = Path(path)
    if path.is_symlink():
        raise ValueError(f"{what} {path} is a symbolic link; give a real folder")
    if path.exists() and not path.is_dir():
        raise ValueError(f"{what} {path} is a file, not a folder")
    return path


def prepare_workdir(path: Path) -> Path:
    """Validate ``path`` as a deployment workdir, clear what an earlier run left, mark it; return it.

    Raises:
        ValueError: ``path`` is a link or a file, or a folder with content and no Stamen marker.
    """
    path = check_output_folder(Path(path).absolute(), "--workdir")
    marker = path / MARKER
    if path.exists():
        entries = sorted(entry.name for entry in path.iterdir())
        if entries and MARKER not in entries:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise ValueError(
                f"--workdir {path} holds files Stamen did not create ({shown}); "
                "give a new or empty folder (Stamen never deletes a folder it did not make)"
            )
        if MARKER in entries and (marker.is_symlink() or not marker.is_file()):
            raise ValueError(f"{marker} is not a regular file; give a new or empty --workdir")
    # All checks passed: clear only Stamen's own entries, then (re)write the marker.
    path.mkdir(parents=True, exist_ok=True)
    for name in OWNED:
        entry = path / name
        if entry.is_symlink() or entry.is_file():
            entry.unlink()
        elif entry.is_dir():
            shutil.rmtree(entry)  # does not follow links inside (fd-based on Linux)
    if not marker.exists():
        descriptor = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(MARKER_TEXT)
    return path


@contextlib.contextmanager
def held_workdir(path: Path) -> Iterator[Path]:
    """:func:`prepare_workdir` under the workdir's lock, held for the block (the deployment's life).

    Raises:
        stamen.server.runlock.FolderLocked: another deployment uses this workdir (one line naming it).
        ValueError: as :func:`prepare_workdir`.
    """
    path = check_output_folder(Path(path).absolute(), "--workdir")
    with FolderLock(path, "deployment workdir"):
        yield prepare_workdir(path)
