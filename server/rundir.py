"""A run directory, ``<output-dir>/<run-name>/``: one object that writes and reads it.

What a run directory holds (every name in :data:`RUN_FILES`; nothing else is Stamen's):

- ``status.json``: what this run is doing: ``running``, ``finished``, ``failed`` or
  ``interrupted`` (:class:`RunStatus`), with the Flower run id, the token of the command
  that started it, the times, whether the run degraded (clients failed) and the error;
- ``config.json``: the full run config;
- ``metrics.jsonl``: one JSON line per round, written as each round finishes;
- ``summary.json``: final and best-validation figures, timings;
- ``model.pt``: the final global state dict (with the model's spec);
- ``curves.svg``: accuracy and loss per round (``curves.png`` in runs of Stamen before 2026-12);
- ``checkpoint.*``: the server's state after the last finished round
  (:mod:`server.checkpoint`), from which ``resume-from`` continues;
- ``certificates.json``, ``unlearn.json``, ``unlearn.md``: optional queries after training.

Safety rules, all enforced here:

- ``run-name`` is one plain path component (:func:`check_run_name`); ``output-dir`` is a
  directory or can become one (:func:`check_output_dir`).
- An existing run directory is reused only with ``overwrite=true``, and only when it is
  a real directory (no symlink) holding Stamen's files alone; a folder holding anything
  else is refused, never emptied.
- :meth:`RunDirectory.plan` only checks; :meth:`RunDirectory.create` is the first call
  that changes anything, and the ServerApp calls it after every other check passed.
- Every file but the append-only ``metrics.jsonl`` is written atomically (a temporary
  file in the same folder, fsync-ed, then renamed over the old one).

A command that starts a run reads its outcome from ``status.json`` and only when the
status carries the token it gave the run (``STAMEN_RUN_TOKEN``): a leftover file of an
older run is never taken for this run's result.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from contract.provenance import provenance
from contract.run_config import RunConfig

Row = dict[str, Any]

STATUS_FILE = "status.json"
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
SUMMARY_FILE = "summary.json"
CURVES_FILE = "curves.svg"
RUN_FILES = frozenset(
    {
        STATUS_FILE,
        CONFIG_FILE,
        METRICS_FILE,
        SUMMARY_FILE,
        "model.pt",
        CURVES_FILE,
        "curves.png",  # written by earlier versions
        "checkpoint.npz",
        "checkpoint.json",
        "certificates.json",
        "unlearn.json",
        "unlearn.md",
        "run.log",
    }
)
EVENTS_PREFIX = "events.out.tfevents."  # TensorBoard's event files (tensorboard=true)
# The environment variable through which a command hands its run a token (see the module docstring).
TOKEN_ENV = "STAMEN_RUN_TOKEN"
# Keys a resumed run may change: they decide how long and where, not what is trained.
RESUMABLE_KEYS = frozenset(
    {"num-server-rounds", "min-clients", "round-timeout", "resume-from", "output-dir", "run-name", "overwrite"}
)
_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=@,-]{0,199}")


class RunStatus(StrEnum):
    """Where a run stands; written by the run itself, or by the command that stopped it."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


def check_run_name(name: str) -> None:
    """``run-name`` must be one plain path component (letters, digits, ``._+=@,-``; no ``/``, no ``..``)."""
    if name and not _RUN_NAME.fullmatch(name):
        raise ValueError(
            f"run-name={name!r} must be one plain folder name (letters, digits and ._+=@,- ; "
            "no '/', no leading '.' or '-'), e.g. run-name='cora-fedavg-1'"
        )


def check_output_dir(output_dir: str) -> Path:
    """The absolute ``output-dir``: a folder, or a path whose nearest existing parent is a writable folder."""
    if not output_dir:
        raise ValueError("output-dir is empty; give a folder, e.g. output-dir='runs'")
    path = Path(output_dir).expanduser().absolute()
    probe = path
    while not probe.exists():
        if probe.is_symlink():
            raise ValueError(f"output-dir={output_dir!r}: {probe} is a broken symbolic link; choose another folder")
        probe = probe.parent
    if not probe.is_dir():
        what = "is" if probe == path else f"lies under {probe}, which is"
        raise ValueError(f"output-dir={output_dir!r} {what} a file, not a folder; choose a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(f"output-dir={output_dir!r}: {probe} is not writable; choose a writable folder")
    return path


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a fsync-ed temporary file in the same folder, rename, fsync the folder.

    Until the rename the old file stays whole; the temporary file is removed whatever fails.
    """
    raw = data.encode() if isinstance(data, str) else data
    staging = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    handle = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)  # the umask applies
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(raw)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(staging, path)
        folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:  # the rename itself survives a power loss
            os.fsync(folder)
        finally:
            os.close(folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
        raise


def row_line(row: Row) -> str:
    """One round's row as its line of ``metrics.jsonl``."""
    return json.dumps(row) + "\n"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2) + "\n"


@dataclass(frozen=True)
class RunDirectory:
    """The folder of one run; :meth:`plan`, :meth:`for_resume` or :meth:`open` make one."""

    path: Path

    # -- finding the folder -------------------------------------------------------------
    @classmethod
    def plan(cls, config: RunConfig) -> RunDirectory:
        """Where a new run's outputs go; checks everything and creates nothing.

        An explicit ``run-name`` that exists (and is not empty) is an error unless
        ``overwrite`` is set and the folder holds only a Stamen run's files; a generated
        name ``<dataset>-<algorithm>-<time>`` gets a suffix until it is new.
        """
        check_run_name(config.run_name)
        root = check_output_dir(config.output_dir)
        if not config.run_name:
            stem = f"{config.dataset}-{config.algorithm}-{time.strftime('%Y%m%d-%H%M%S')}"
            path, suffix = root / stem, 1
            while path.exists() or path.is_symlink():
                suffix += 1
                path = root / f"{stem}-{suffix}"
            return cls(path)
        path = root / config.run_name
        if path.is_symlink():
            raise ValueError(f"run directory {path} is a symbolic link; Stamen writes only into real folders")
        if path.exists():
            if not path.is_dir():
                raise FileExistsError(f"{path} exists and is not a folder; choose another run-name")
            entries = sorted(entry.name for entry in path.iterdir())
            if entries and not config.overwrite:
                raise FileExistsError(
                    f"run directory {path} already exists; choose another run-name or set overwrite=true"
                )
            foreign = [name for name in entries if not _is_run_file(name)]
            if foreign:
                raise FileExistsError(
                    f"run directory {path} holds more than a run's own outputs ({', '.join(foreign[:5])}); "
                    "overwrite=true replaces only those: move the rest away or choose another run-name"
                )
        return cls(path)

    @classmethod
    def open(cls, path: str | Path) -> RunDirectory:
        """An existing run directory, to read (a folder holding ``config.json``)."""
        folder = Path(path).expanduser().absolute()
        if not (folder / CONFIG_FILE).is_file():
            raise FileNotFoundError(f"{folder} is not a run directory (no {CONFIG_FILE}); give a run's output folder")
        return cls(folder)

    # -- writing ------------------------------------------------------------------------
    def create(self, config: RunConfig, **identity: Any) -> None:
        """Start the run here: remove an overwritten run's files, then write status, config and metrics.

        Call only after every check passed. Only the names in :data:`RUN_FILES` (and
        temporary files of Stamen's atomic writes) are ever removed.
        """
        if self.path.is_dir():
            for entry in sorted(self.path.iterdir()):
                if not _is_run_file(entry.name) or entry.is_dir():
                    raise FileExistsError(f"{entry} is not a Stamen run file; leaving {self.path} as it is")
            for entry in self.path.iterdir():
                entry.unlink()
        else:
            self.path.mkdir(parents=True)
        self.start(config, **identity)
        atomic_write(self.path / METRICS_FILE, "")

    def start(self, config: RunConfig, **identity: Any) -> None:
        """Record this run as running (a new run, or a resumed one), who runs it (``identity``:
        e.g. the Flower run id and the engine) and its config."""
        self.set_status(
            RunStatus.RUNNING,
            **identity,
            token=os.environ.get(TOKEN_ENV),
            pid=os.getpid(),
            provenance=provenance(seeds=[config.seed]),
            started=time.time(),
        )
        atomic_write(self.path / CONFIG_FILE, _json(config.to_flower()))

    def set_status(self, status: RunStatus, **fields: Any) -> None:
        """Write ``status.json``: the new status over the fields already recorded."""
        record = self.status() if (self.path / STATUS_FILE).is_file() else {}
        record.update(fields, status=status.value, updated=time.time())
        atomic_write(self.path / STATUS_FILE, _json(record))

    def check_resume(self, config: RunConfig) -> None:
        """Refuse to resume with a run config that changes what is trained (before anything is touched)."""
        started = self.config()
        current = config.to_flower()
        changed = sorted(k for k in (set(started) | set(current)) - RESUMABLE_KEYS if started.get(k) != current.get(k))
        if changed:
            raise ValueError(
                f"resume-from={str(self.path)!r}: the run config differs from the checkpointed run's in {changed}; "
                "resume with the original values"
            )

    def reopen(self, config: RunConfig, checkpoint_round: int, **identity: Any) -> None:
        """Continue this run after round ``checkpoint_round``: rows of later rounds are dropped (run again)."""
        self.check_resume(config)
        kept = [row for row in self.rows() if row["round"] < checkpoint_round]
        atomic_write(self.path / METRICS_FILE, "".join(json.dumps(row) + "\n" for row in kept))
        self.start(config, **identity)

    def append_row(self, row: Row) -> None:
        self.append_line(row_line(row))

    def append_line(self, line: str) -> None:
        """Append one line of :func:`row_line` to ``metrics.jsonl``, durably."""
        with open(self.path / METRICS_FILE, "a") as stream:
            stream.write(line)
            stream.flush()
            os.fsync(stream.fileno())

    def write_json(self, name: str, value: Any) -> None:
        """One of the run's JSON files (``summary.json``, ``certificates.json``, ...), atomically."""
        if name not in RUN_FILES:
            raise ValueError(f"{name} is not a run directory file")
        atomic_write(self.path / name, _json(value))

    # -- reading ------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """``status.json`` (empty for a run directory written before statuses existed)."""
        return self._read_json(STATUS_FILE) if (self.path / STATUS_FILE).is_file() else {}

    def config(self) -> dict[str, Any]:
        return self._read_json(CONFIG_FILE)

    def summary(self) -> dict[str, Any]:
        return self._read_json(SUMMARY_FILE)

    def rows(self) -> list[Row]:
        return [json.loads(line) for line in self._text(METRICS_FILE).splitlines() if line]

    def outcome(self, token: str) -> dict[str, Any] | None:
        """The status this run wrote for the command holding ``token``; None if it never wrote one."""
        status = self.status() if self.path.is_dir() else {}
        return status if status.get("token") == token else None

    def _text(self, name: str) -> str:
        try:
            return (self.path / name).read_text()
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.path / name} not found: is {self.path} a run directory?") from None

    def _read_json(self, name: str) -> dict[str, Any]:
        try:
            value = json.loads(self._text(name))
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{self.path / name} is not valid JSON ({error.msg}); the run directory is damaged"
            ) from None
        if not isinstance(value, dict):
            raise ValueError(f"{self.path / name} does not hold a JSON object; the run directory is damaged")
        return value


def _is_run_file(name: str) -> bool:
    """One of Stamen's run files, a TensorBoard event file it wrote, or a temporary file of its atomic writes."""
    return name in RUN_FILES or name.startswith(EVENTS_PREFIX) or any(name.startswith(f".{f}.") for f in RUN_FILES)


@contextlib.contextmanager
def run_token() -> Iterator[str]:
    """A fresh token in ``STAMEN_RUN_TOKEN`` for the processes started inside the block."""
    import uuid

    token = uuid.uuid4().hex
    saved = os.environ.get(TOKEN_ENV)
    os.environ[TOKEN_ENV] = token
    try:
        yield token
    finally:
        if saved is None:
            os.environ.pop(TOKEN_ENV, None)
        else:
            os.environ[TOKEN_ENV] = saved
