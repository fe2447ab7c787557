"""The journal of a long job made of units: each finished unit kept on disk as it completes.

``stamen bench NAME`` keeps ``<out>/<name>.partial.jsonl`` beside its record while it runs,
``stamen audit privacy --output FILE`` keeps ``FILE.partial.jsonl``. The first line names
the job and the settings it runs with::

    {"journal": "stamen bench algorithms", "version": 1, "digest": "<sha256>", "settings": {...}}

``digest`` (:func:`settings_digest`) is the SHA-256 of the settings as canonical JSON;
``settings`` are kept so that a refusal can say which of them differ. Each further line is
one finished unit, a string key and a plain JSON value, written whole and fsync-ed::

    {"unit": "fedavg/csbm/louvain/0", "value": {...}}

Rules, all enforced here:

- a journal of another job or other settings (or a file that is no journal) is refused
  (:class:`JournalRefused`, a ``ValueError``: one line naming the file and what to do),
  before the file is touched;
- a torn last line (a crash in mid-write) is dropped with a note and cut off the file;
  a damaged line before the last is refused;
- one writer: the journal holds the :class:`stamen.server.runlock.FolderLock` of the output it
  is the journal of (``<out>/.<name>.lock``) from :meth:`UnitJournal.open` to
  :meth:`UnitJournal.close`; a second writer is refused at once;
- nothing is written before the first unit: a job refused or stopped before it finished
  one leaves no journal behind;
- :meth:`UnitJournal.remove` deletes it once the job's output holds all of it.

Unlike :mod:`stamen.certify.journal` (whose units are typed outcomes and whose digest covers
arrays), the units here are opaque to the journal: the command decides what a key names.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from stamen.contract import strict_json
from stamen.server.runlock import FolderLock

VERSION = 1
SUFFIX = ".partial.jsonl"


class JournalRefused(ValueError):
    """The journal on disk belongs to another job, other settings, or is damaged."""


def _plain(value: Any) -> Any:
    """A numpy scalar (or anything with ``item``) as its Python value, for :func:`json.dumps`."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"a journal unit holds plain JSON values only, not {type(value).__name__}")


def _encode(line: dict[str, Any]) -> bytes:
    """One line, strict JSON (a non-finite figure is ``null``, as in the record it ends in)."""
    plain = json.loads(json.dumps(line, default=_plain))  # numpy scalars as Python values
    return (strict_json.dumps(plain) + "\n").encode()


def settings_digest(settings: dict[str, Any]) -> str:
    """SHA-256 of ``settings`` as canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def _object(raw: bytes) -> dict[str, Any] | None:
    """A line as a JSON object, ``None`` if it is not one."""
    with contextlib.suppress(UnicodeDecodeError, ValueError):
        found = json.loads(raw)
        if isinstance(found, dict):
            return found
    return None


class UnitJournal:
    """An open journal: the units it holds (read back and added) and the lock of its path."""

    def __init__(self, path: Path, job: str, settings: dict[str, Any], lock: FolderLock, advice: str) -> None:
        self.path = path
        self.advice = advice
        self.job = job
        self.settings = json.loads(json.dumps(settings, default=str))
        self.digest = settings_digest(self.settings)
        self.lock = lock
        self.units: dict[str, Any] = {}
        self.notes: list[str] = []  # what reading dropped (a torn last line)
        self.read_back = 0
        self._fd: int | None = None

    @classmethod
    def open(cls, output: str | Path, job: str, settings: dict[str, Any], what: str, advice: str) -> UnitJournal:
        """The journal of ``output`` (:func:`journal_path`), locked, with the units kept there (none if absent).

        The lock is ``output``'s (:class:`stamen.server.runlock.FolderLock`), so it holds whether or
        not a journal exists yet; ``what`` names ``output`` in its refusal (e.g. ``benchmark``).
        ``advice`` ends a refusal of the file (e.g. ``or give another --out or --name``).
        """
        output = Path(output).expanduser().absolute()
        lock = FolderLock(output, what)
        lock.acquire()
        journal = cls(journal_path(output), job, settings, lock, advice)
        try:
            journal._load()
        except BaseException:
            lock.release()
            raise
        return journal

    # ------------------------------------------------------------------ reading
    def _refuse(self, why: str) -> JournalRefused:
        return JournalRefused(f"{self.path} {why}; delete that file to start over, {self.advice}")

    def _load(self) -> None:
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            raise self._refuse("is not a plain file")
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()  # the file ends with a whole line
        if len(lines) <= 1 and not data.endswith(b"\n"):  # empty, or its first line cut in mid-write
            if data:
                self.notes.append(f"{self.path.name}: dropped a torn first line (a crash in mid-write)")
            self.path.unlink()  # no unit was ever kept
            return
        self._check(_object(lines[0]))
        kept = len(lines[0]) + 1
        for number, raw in enumerate(lines[1:], start=2):
            unit = _object(raw)
            whole = unit is not None and isinstance(unit.get("unit"), str) and "value" in unit
            if whole and (number < len(lines) or data.endswith(b"\n")):
                self.units[unit["unit"]] = unit["value"]
                kept += len(raw) + 1
                continue
            if number < len(lines):
                raise self._refuse(f"is damaged at line {number}")
            self.notes.append(
                f"{self.path.name}: dropped a torn last line ({len(raw)} bytes, a crash in mid-write); "
                "its unit runs again"
            )
            os.truncate(self.path, kept)
        self.read_back = len(self.units)

    def _check(self, header: dict[str, Any] | None) -> None:
        if header is None or header.get("journal") != self.job:
            raise self._refuse(f"is not a journal of {self.job}")
        if header.get("version") != VERSION:
            raise self._refuse(f"has journal format {header.get('version')}, this Stamen writes {VERSION}")
        if header.get("digest") == self.digest:
            return
        theirs = header.get("settings") if isinstance(header.get("settings"), dict) else {}
        differ = sorted(key for key in {*theirs, *self.settings} if theirs.get(key) != self.settings.get(key))
        raise self._refuse(f"is the journal of other settings of {self.job} (they differ in: {', '.join(differ)})")

    # ------------------------------------------------------------------ writing
    def _write(self, data: bytes) -> None:
        fresh = False
        if self._fd is None:  # the first unit this process writes: open the file, a new one with its header
            fresh = not self.path.exists()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
            if fresh:
                header = {"journal": self.job, "version": VERSION, "digest": self.digest, "settings": self.settings}
                data = _encode(header) + data
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)
        if fresh:
            _sync_name(self.path.parent)

    def add(self, key: str, value: Any) -> Any:
        """Keep a finished unit durably; returns its value as a resumed job reads it back (plain JSON)."""
        data = _encode({"unit": key, "value": value})
        self._write(data)
        self.units[key] = json.loads(data)["value"]
        return self.units[key]

    def close(self) -> None:
        """Release the file and its lock; the journal stays for a later run to resume from."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.lock.release()

    def remove(self) -> None:
        """Delete the journal (the job's output holds all of it now) and release its lock."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.close()


def _sync_name(folder: Path) -> None:
    """Make the name of a file just created in ``folder`` survive a power loss."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def journal_path(output: Path) -> Path:
    """The journal beside ``output``: ``<output>.partial.jsonl`` (``<out>/<name>`` for a bench)."""
    return output.with_name(output.name + SUFFIX)
