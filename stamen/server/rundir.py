"""A run directory, ``<output-dir>/<run-name>/``: one object that writes and reads it.

What a run directory holds (every name in :data:`RUN_FILES`; nothing else is Stamen's):

- ``status.json``: what this run is doing: ``running``, ``finished``, ``failed`` or
  ``interrupted`` (:class:`RunStatus`), with the Flower run id, the token of the command
  that started it, the times, whether the run degraded (clients failed) and the error;
- ``config.json``: the full run config;
- ``metrics.jsonl``: one JSON line per round, written as each round finishes;
- ``summary.json``: final and best-validation figures, timings;
- ``model.pt``: the final global state dict (with the model's spec);
- ``curves.png`` and ``curves.svg``: accuracy and loss per round;
- ``checkpoint.*``: the server's state after the last finished round
  (:mod:`stamen.server.checkpoint`), from which ``resume-from`` continues;
- ``certificates.json``, ``unlearn.json``, ``unlearn.md``: optional queries after training;
- ``run.log``: the run's log, as the command that started it kept it;
- ``events.out.tfevents.*``, ``mlflow.db``: live tracking (``tracking``, :mod:`stamen.server.tracking`);
  ``wandb/`` (W&B's offline run) is W&B's, not Stamen's: ``overwrite=true`` refuses a folder holding it.

Safety rules, all enforced here:

- ``run-name`` is one plain path component (:func:`check_run_name`); ``output-dir`` is a
  directory or can become one (:func:`check_output_dir`).
- An existing run directory is reused only with ``overwrite=true``, and only when it is
  a real directory (no symlink) holding Stamen's files alone; a folder holding anything
  else is refused, never emptied.
- :meth:`RunDirectory.plan` only checks; :meth:`RunDirectory.create` is the first call
  that changes anything, and the ServerApp calls it after every other check passed.
- Every file but the append-only ``metrics.jsonl`` is written atomically (a temporary
  file in the same folder, fsync-ed, then renamed over the old one); rows are appended
  with ``O_NOFOLLOW`` (never through a link put in their place).
- One writer at a time: the caller holds the folder's lock (:mod:`stamen.server.runlock`) from
  before :meth:`RunDirectory.plan` is trusted until its last write.
- A resume changes nothing before its checks passed (:meth:`RunDirectory.reopen`,
  :meth:`RunDirectory.resume_rows`); the rows it runs again are replaced only with its
  first new row (:meth:`RunDirectory.replace_rows`).
- ``status.json`` records the digest of ``config.json`` (:meth:`RunDirectory.recorded_config`
  refuses a config edited afterwards).

A command that starts a run reads its outcome from ``status.json`` and only when the
status carries the token it gave the run (``STAMEN_RUN_TOKEN``): a leftover file of an
older run is never taken for this run's result.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from stamen.common.file_writes import atomic_write, rewrite_in_place
from stamen.contract.figures import Row
from stamen.contract.provenance import Provenance
from stamen.contract.run_config import RunConfig
from stamen.contract.strict_json import dumps
from stamen.contract.tracking import translate_retired
from stamen.graphs.names import dataset_slug
from stamen.server.runlock import TOKEN_ENV, lock_path

STATUS_FILE = "status.json"
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
SUMMARY_FILE = "summary.json"
CURVES_FILE = "curves.svg"
CURVES_PNG = "curves.png"
RUN_FILES = frozenset(
    {
        STATUS_FILE,
        CONFIG_FILE,
        METRICS_FILE,
        SUMMARY_FILE,
        "model.pt",
        CURVES_FILE,
        CURVES_PNG,
        "checkpoint.npz",
        "checkpoint.json",
        "certificates.json",
        "unlearn.json",
        "unlearn.md",
        "run.log",
        "mlflow.db",  # tracking='mlflow' without $MLFLOW_TRACKING_URI (stamen/server/tracking.py)
        "mlflow.db-journal",
    }
)
EVENTS_PREFIX = "events.out.tfevents."  # TensorBoard's event files (tracking='tensorboard')
# Keys a resumed run may change: they decide how long and where, not what is trained.
RESUMABLE_KEYS = frozenset(
    {
        "num-server-rounds",
        "min-clients",
        "round-timeout",
        "resume-from",
        "output-dir",
        "run-name",
        "overwrite",
        "tracking",
    }
)
_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=@,-]{0,199}")


class RunStatus(StrEnum):
    """Where a run stands; written by the run itself, or by the command that stopped it."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    PRUNED = "pruned"  # ended early on purpose by its caller's row observer (a tuner's pruner): rows up to there


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


class TornLastRow(ValueError):
    """The last line of ``metrics.jsonl`` is cut short (a write stopped midway): which file and line."""

    def __init__(self, file: Path, line: int, run_dir: Path) -> None:
        self.file, self.line = file, line
        super().__init__(
            f"{file}: line {line}, the last, was cut short (the run was stopped while writing it); resume the run "
            f"with resume-from='{run_dir}' (it runs that round again), or delete that line"
        )


def row_line(row: Row) -> str:
    """One round's row as its line of ``metrics.jsonl``: strict JSON, a non-finite figure as ``null``."""
    return dumps(row) + "\n"


def _json(value: Any) -> str:
    """A run file's JSON (strict: a non-finite figure as ``null``, :mod:`stamen.contract.strict_json`)."""
    return dumps(value, indent=2) + "\n"


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
            # the dataset as a plain name: 'tu:MUTAG', 'pyg:Amazon/Computers' hold ':' and '/'
            stem = f"{dataset_slug(config.dataset)}-{config.algorithm}-{time.strftime('%Y%m%d-%H%M%S')}"
            path, suffix = root / stem, 1
            # a name whose lock file exists was taken by a run started a moment ago (its folder may not exist yet)
            while path.exists() or path.is_symlink() or lock_path(path).exists():
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
    def open(cls, path: str | os.PathLike[str]) -> RunDirectory:
        """An existing run directory, to read (a folder holding ``config.json``)."""
        folder = Path(path).expanduser().absolute()
        if not (folder / CONFIG_FILE).is_file():
            if os.path.lexists(folder / CONFIG_FILE) and folder.is_dir():  # a FIFO, a device, a folder, a link
                raise ValueError(f"{folder / CONFIG_FILE} is not a regular file; the run directory is damaged")
            raise FileNotFoundError(f"{folder} is not a run directory (no {CONFIG_FILE}); give a run's output folder")
        return cls(folder)

    # -- writing ------------------------------------------------------------------------
    def create(self, config: RunConfig, provenance: Provenance | None = None, **identity: Any) -> None:
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
        self.start(config, provenance, **identity)
        atomic_write(self.path / METRICS_FILE, "")

    def start(self, config: RunConfig, provenance: Provenance | None = None, **identity: Any) -> None:
        """Record this run as running (a new run, or a resumed one), who runs it (``identity``:
        e.g. the Flower run id and the engine), who started it (``provenance``; ``None``: this process,
        :meth:`Provenance.of_process`) and its config."""
        text = _json(config.to_flower())
        self.set_status(
            RunStatus.RUNNING,
            **identity,
            token=os.environ.get(TOKEN_ENV),
            pid=os.getpid(),
            provenance=(provenance or Provenance.of_process()).record(seeds=[config.seed]),
            started=time.time(),
            config_sha256=hashlib.sha256(text.encode()).hexdigest(),
        )
        atomic_write(self.path / CONFIG_FILE, text)

    def set_status(self, status: RunStatus, **fields: Any) -> None:
        """Write ``status.json``: the new status over the fields already recorded."""
        record = self.status() if (self.path / STATUS_FILE).is_file() else {}
        record.update(fields, status=status.value, updated=time.time())
        try:
            atomic_write(self.path / STATUS_FILE, _json(record))
        except OSError:  # a full disk: an ended run must not read `running`, so the record goes in the old one's place
            small = {key: record[key] for key in ("status", "token", "error", "cause", "updated") if key in record}
            texts = [_json(record), _json(small)]  # the whole record, else what a reader of the outcome needs
            if status is RunStatus.RUNNING or not rewrite_in_place(self.path / STATUS_FILE, texts):
                raise

    def check_resume(self, config: RunConfig) -> None:
        """Refuse to resume with a run config that changes what is trained (before anything is touched)."""
        started = translate_retired(self.config())  # a run of an earlier version: its keys as read now
        current = config.to_flower()
        changed = sorted(k for k in (set(started) | set(current)) - RESUMABLE_KEYS if started.get(k) != current.get(k))
        if changed:
            raise ValueError(
                f"resume-from={str(self.path)!r}: the run config differs from the checkpointed run's in {changed}; "
                "resume with the original values"
            )

    def reopen(
        self, config: RunConfig, checkpoint_round: int, provenance: Provenance | None = None, **identity: Any
    ) -> list[Row]:
        """Continue this run after round ``checkpoint_round``; returns the rows kept (rounds before it).

        Nothing of the rows is changed here: every check (:meth:`check_resume`, :meth:`resume_rows`)
        runs first, and the rows of rounds from ``checkpoint_round`` on, which the run computes
        again, are replaced only together with the first new row (:meth:`replace_rows`). A resume
        that fails before its first round leaves ``metrics.jsonl`` as it found it.
        """
        self.check_resume(config)
        kept = self.resume_rows(checkpoint_round)
        self.start(config, provenance, **identity)
        return kept

    def resume_rows(self, checkpoint_round: int) -> list[Row]:
        """The rows a resume from ``checkpoint_round`` keeps: rounds before it, each of 1.. once, in order.

        A torn last line (the run was stopped while writing a row of a round it will run again)
        is left out; any other damage is a ValueError naming the file and line.
        """
        kept = [row for row in self.rows(torn_last_ok=True) if row["round"] < checkpoint_round]
        rounds = [row["round"] for row in kept]
        if rounds != sorted(set(rounds)) or set(range(1, checkpoint_round)) - set(rounds):
            raise ValueError(
                f"{self.path / METRICS_FILE} does not hold the rows of rounds 1..{checkpoint_round - 1} once each, "
                f"in order (found rounds {_ranges(rounds)}) although the checkpoint is at round {checkpoint_round}; "
                "the run directory was changed by hand: restore it, or start a new run"
            )
        return kept

    def replace_rows(self, rows: list[Row], line: str) -> None:
        """``metrics.jsonl`` becomes ``rows`` and then ``line``, atomically (a resumed run's first new row)."""
        atomic_write(self.path / METRICS_FILE, "".join(row_line(row) for row in rows) + line)

    def append_row(self, row: Row) -> None:
        self.append_line(row_line(row))

    def append_line(self, line: str) -> None:
        """Append one line of :func:`row_line` to ``metrics.jsonl``, durably."""
        # O_NOFOLLOW: a symbolic link put in the run directory's place of metrics.jsonl is never written through
        file = self.path / METRICS_FILE
        handle = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        try:
            with os.fdopen(handle, "a") as stream:
                stream.write(line)
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as error:
            if error.filename is None and error.errno is not None:  # a full disk names the file
                raise type(error)(error.errno, error.strerror, str(file)) from error
            raise

    def write_json(self, name: str, value: Any) -> None:
        """One of the run's JSON files (``summary.json``, ``certificates.json``, ...), atomically."""
        if name not in RUN_FILES:
            raise ValueError(f"{name} is not a run directory file")
        atomic_write(self.path / name, _json(value))

    # -- reading ------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """``status.json`` (empty for a run directory written before statuses existed)."""
        return self._read_json(STATUS_FILE) if os.path.lexists(self.path / STATUS_FILE) else {}

    def config(self) -> dict[str, Any]:
        return self._read_json(CONFIG_FILE)

    def recorded_config(self) -> dict[str, Any]:
        """``config.json``, checked against the digest the run recorded in ``status.json`` when it started.

        A config edited afterwards would make a later query (``stamen unlearn``) compute on
        another graph or model than the run trained: a ValueError naming the file. Run
        directories of earlier versions recorded no digest and are taken as they are.
        """
        recorded = self.status().get("config_sha256")
        if recorded is not None and hashlib.sha256(self._text(CONFIG_FILE).encode()).hexdigest() != recorded:
            raise ValueError(
                f"{self.path / CONFIG_FILE} was changed after the run wrote it (its digest differs from the one in "
                f"{STATUS_FILE}); restore it, or train a new run with the config you want"
            )
        return self.config()

    def summary(self) -> dict[str, Any]:
        return self._read_json(SUMMARY_FILE)

    def rows(self, torn_last_ok: bool = False) -> list[Row]:
        """The rows of ``metrics.jsonl``, each a JSON object with an integer ``round``.

        A line that is not such a row is a ValueError naming the file, the line and what to
        do; ``torn_last_ok`` leaves out an unfinished last line (no newline: a write cut short)
        instead.
        """
        file = self.path / METRICS_FILE
        text = self._text(METRICS_FILE)
        lines = text.split("\n")
        torn = lines.pop()  # "" when the file ends with a newline, as every whole write does
        rows: list[Row] = []
        for number, line in enumerate(lines, 1):
            if line:
                rows.append(_row(file, number, line))
        if torn and not torn_last_ok:
            try:
                rows.append(_row(file, len(lines) + 1, torn))
            except ValueError:
                raise TornLastRow(file, len(lines) + 1, self.path) from None
        return rows

    def finished_rows(self) -> list[Row]:
        """The rows of a finished run: a cut-short last line was cut after it finished (no resume writes that
        row again), a ValueError naming the file and the line."""
        try:
            return self.rows()
        except TornLastRow as torn:
            raise ValueError(
                f"{torn.file}: line {torn.line}, the last, was cut short though the run finished: the file was "
                "changed afterwards; restore it from a copy, or delete that line"
            ) from None

    def outcome(self, token: str) -> dict[str, Any] | None:
        """The status this run wrote for the command holding ``token``; None if it never wrote one."""
        status = self.status() if self.path.is_dir() else {}
        return status if status.get("token") == token else None

    def _text(self, name: str) -> str:
        path = self.path / name
        try:
            # opened without blocking and checked before a read: a FIFO would block it, a device never end it
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with open(fd, encoding="utf-8") as stream:
                if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                    raise ValueError(f"{path} is not a regular file; the run directory is damaged")
                return stream.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} not found: is {self.path} a run directory?") from None
        except IsADirectoryError:
            raise ValueError(f"{path} is a folder, not a file; the run directory is damaged") from None
        except UnicodeDecodeError:
            raise ValueError(f"{self.path / name} is not UTF-8 text; the run directory is damaged") from None

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


def _row(file: Path, number: int, line: str) -> Row:
    """Line ``number`` of ``metrics.jsonl`` as a row, or a ValueError naming it."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"{file}: line {number} is not JSON ({error.msg}); the run directory is damaged") from None
    if not isinstance(row, dict) or not isinstance(row.get("round"), int) or isinstance(row["round"], bool):
        raise ValueError(
            f"{file}: line {number} is not a round's row (no integer 'round'); the run directory is damaged"
        )
    return row


def _ranges(rounds: list[int]) -> str:
    """``0-3, 5, 7-8`` (in the order given), ``none`` for no rounds."""
    parts: list[list[int]] = []
    for value in rounds:
        if parts and value == parts[-1][-1] + 1:
            parts[-1].append(value)
        else:
            parts.append([value])
    return ", ".join(f"{p[0]}-{p[-1]}" if len(p) > 1 else str(p[0]) for p in parts) or "none"


def _is_run_file(name: str) -> bool:
    """One of Stamen's run files, a TensorBoard event file it wrote, or a temporary file of its atomic writes."""
    return name in RUN_FILES or name.startswith(EVENTS_PREFIX) or any(name.startswith(f".{f}.") for f in RUN_FILES)


@contextlib.contextmanager
def run_token() -> Iterator[str]:
    """A fresh token in ``STAMEN_RUN_TOKEN`` for the processes started inside the block."""
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
