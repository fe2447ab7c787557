"""Where a result came from: Stamen's version, the commit, the packages, the date, the command.

Every JSON that Stamen writes (a run's ``status.json`` and ``summary.json``, sweeps,
certificates, unlearning results, benchmark records) carries :func:`provenance`. The
commit is read from the checkout the code runs from; a process that runs an installed
copy of the app (a Flower simulation or SuperNode installs the app bundle) takes the
commit and command the ``stamen`` command handed it (``STAMEN_COMMIT``, ``STAMEN_COMMAND``),
or, on a machine the command's environment does not reach (a Ray cluster's other nodes), the
commit that the staged app carries in :data:`BUILD_FILE`.
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


def provenance(**extra: Any) -> dict[str, Any]:
    """The provenance record; ``extra`` adds what the caller knows (e.g. ``seeds``)."""
    return {
        "stamen": _version("stamen"),
        "commit": code_version(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": command_line(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": {name: _version(name) for name in PACKAGES},
        **extra,
    }


def handed_down() -> dict[str, str]:
    """The environment that lets processes started by this one record this command's provenance."""
    return {COMMIT_ENV: code_version() or "", COMMAND_ENV: command_line()}
