"""Where a result came from: Stamen's version, the commit, the packages, the date, the command.

Every JSON that Stamen writes (a run's ``status.json`` and ``summary.json``, sweeps,
certificates, unlearning results, benchmark records) carries :func:`provenance`. The
commit is read from the checkout the code runs from; a process that runs an installed
copy of the app (a Flower simulation or SuperNode installs the app bundle) takes the
commit and command the ``stamen`` command handed it (``STAMEN_COMMIT``, ``STAMEN_COMMAND``),
or, on a machine the command's environment does not reach (a Ray cluster's other nodes), the
commit that the staged app carries in :data:`BUILD_FILE`.
A run started from Python is handed its :class:`Provenance` as a value (the typed entry,
:func:`stamen.simulations.runner.run`); only a process that the run starts (Flower's ServerApp)
reads it from its own environment, which the one that starts it sets (:meth:`Provenance.environment`).
Only the standard library: the ServerApp starts without PyTorch.
"""

from __future__ import annotations

import datetime
import functools
import os
import platform
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("flwr", "torch", "torch-geometric", "opacus", "pulp", "numpy", "scipy")
COMMIT_ENV = "STAMEN_COMMIT"
COMMAND_ENV = "STAMEN_COMMAND"
BUILD_FILE = "stamen-build.toml"  # beside the packages of a staged app (stamen.simulations.flower.stage_app)


@functools.cache
def staged_build() -> dict[str, str]:
    """The version and commit that a staged app carries in :data:`BUILD_FILE` (empty outside a staged app)."""
    path = Path(__file__).resolve().parents[2] / BUILD_FILE
    if not path.is_file():
        return {}

    try:
        return {key: str(value) for key, value in tomllib.loads(path.read_text()).items()}
    except (OSError, ValueError):
        return {}


@functools.cache
def code_version() -> str | None:
    """The checkout's commit, with ``+changes`` when the working tree differs; ``None`` outside git."""
    if os.environ.get(COMMIT_ENV):
        return os.environ[COMMIT_ENV]
    root = Path(__file__).resolve().parents[2]
    if (root / BUILD_FILE).is_file():
        return staged_build().get("commit") or None

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return (commit + ("+changes" if changed else "")) or None


@functools.cache
def stamen_version() -> str | None:
    """Stamen's version: the staged app's (:data:`BUILD_FILE`), else the installed one's (``None``: neither).

    Once per process, like :func:`code_version`: a client compares it with the head's on every training
    message, and reading the installed metadata scans and parses the environment's package records (about
    10 ms a message in a Ray actor, a third of a small client's handler at 1,000 clients).
    """
    return staged_build().get("version") or _version("stamen")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def command_line() -> str:
    """The command as the user typed it (the ``stamen`` command's, for the processes it started)."""
    return os.environ.get(COMMAND_ENV) or " ".join(shlex.quote(a) for a in [Path(sys.argv[0]).name, *sys.argv[1:]])


@dataclass(frozen=True)
class Provenance:
    """Who started a piece of work: the command and the code version, recorded with its results.

    Attributes:
        command: the command or call that started it, e.g. ``stamen run --clients 3`` or
            ``stamen.run({'csbm-nodes': 300}, clients=3)``.
        commit: the checkout's commit (``+changes`` when its tree differs; ``None``: unknown).
    """

    command: str
    commit: str | None

    @classmethod
    def of_process(cls) -> Provenance:
        """This process's: its command line (or the one handed down to it) and its code version."""
        return cls(command_line(), code_version())

    @classmethod
    def of_command(cls, command: str) -> Provenance:
        """``command``, with this checkout's code version."""
        return cls(command, code_version())

    def environment(self) -> dict[str, str]:
        """The variables that let a process this one starts record this provenance as its own."""
        return {COMMIT_ENV: self.commit or "", COMMAND_ENV: self.command}

    def record(self, **extra: Any) -> dict[str, Any]:
        """The provenance record (:func:`provenance`) with this command and commit."""
        return {
            "stamen": _version("stamen"),
            "commit": self.commit,
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "command": self.command,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "packages": {name: _version(name) for name in PACKAGES},
            **extra,
        }


def provenance(**extra: Any) -> dict[str, Any]:
    """This process's provenance record (:meth:`Provenance.of_process`); ``extra`` adds what the caller knows
    (e.g. ``seeds``)."""
    return Provenance.of_process().record(**extra)
