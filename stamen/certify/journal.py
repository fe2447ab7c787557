"""The journal of a long certification: each finished unit, one JSON line, as it is decided.

``<out>/certificate.partial.jsonl`` lies beside the final outputs of a certification
(:func:`stamen.certify.report.write_outputs`) while it runs. Its first line says which job it
belongs to::

    {"journal": "stamen certify", "version": 1, "digest": "<sha256>", "options": {...}}

``digest`` (:func:`job_digest`) covers everything that changes an answer: the options
and the data (graph, labelled nodes, targets, a user kernel, the attackers' nodes);
``options`` is kept so that a refusal can name what differs. Every further line is one
unit of :func:`stamen.certify.pipeline.run`, appended and fsync-ed as it is decided::

    {"arch": "gcn", "target": 3, "node": 1207, "outcome": {...}}   # sample-wise: a target, all budgets
    {"arch": "gcn", "budget": 2, "outcome": {...}}                  # collective: a budget

Rules, all enforced here:

- a journal of another job (another digest, or a file that is no journal) is refused
  (:class:`JournalMismatch`, one line naming the file and what to do);
- a torn last line (a crash in mid-write: no newline, or not a whole unit) is dropped
  with a note and cut off the file before anything is appended; a damaged line before
  the last is refused;
- one writer: the file is locked (``flock``) while it is open; a second is refused;
- :meth:`Journal.remove` deletes it once the final outputs hold everything it held.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from stamen.certify.outcome import CollectiveOutcome, TargetOutcome

JOURNAL_FILE = "certificate.partial.jsonl"
FORMAT = "stamen certify"
VERSION = 1


class JournalMismatch(ValueError):
    """The output folder holds a journal of another job (or a file that is no journal)."""


def job_digest(options: dict, arrays: dict[str, np.ndarray | None]) -> str:
    """SHA-256 of the options (as canonical JSON) and of each array (name, dtype, shape, bytes)."""
    h = hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode())
    for name in sorted(arrays):
        arr = arrays[name]
        h.update(f"\n{name}:".encode())
        if arr is None:
            h.update(b"none")
            continue
        arr = np.ascontiguousarray(arr)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(memoryview(arr).cast("B"))
    return h.hexdigest()


@dataclass
class Journal:
    """An open journal (locked): the units read back from it, and where new ones go."""

    path: Path
    digest: str
    fd: int = field(repr=False)
    notes: list[str] = field(default_factory=list)  # what reading it dropped (a torn last line)
    targets: dict[str, dict[int, TargetOutcome]] = field(default_factory=dict)  # arch -> position -> outcome
    budgets: dict[str, dict[int, CollectiveOutcome]] = field(default_factory=dict)  # arch -> budget -> outcome
    read_back: int = 0  # units read from the file when it was opened

    @classmethod
    def open(cls, folder: Path, digest: str, options: dict) -> Journal:
        """The journal of this job in ``folder``: resumed when it is there, else started (header written)."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / JOURNAL_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ValueError(
                    f"{path} is being written by another certification; wait for it to end or give another --out"
                ) from None
            journal = cls(path, digest, fd)
            journal._read(options)
        except BaseException:
            os.close(fd)
            raise
        return journal

    # ------------------------------------------------------------------ reading
    def _read(self, options: dict) -> None:
        data = self.path.read_bytes()
        if not data:
            self._start(options)
            return
        lines = data.split(b"\n")
        complete = lines[:-1]  # the piece after the last newline is torn (b"" when the file ends whole)
        if lines[-1]:
            complete.append(None)  # marks the torn tail
        header = _parse(complete[0])
        if header is None:
            if len(complete) == 1:  # only a torn header: nothing was kept yet
                self.notes.append(f"{self.path.name}: dropped a torn first line (a crash in mid-write)")
                os.ftruncate(self.fd, 0)
                self._start(options)
                return
            raise JournalMismatch(f"{self.path} is not a journal of stamen certify; give another --out or delete it")
        self._check_header(header, options)
        good_end = len(complete[0]) + 1
        for number, raw in enumerate(complete[1:], start=2):
            last = number == len(complete)
            unit = _parse(raw)
            if unit is None or not self._take(unit):
                if not last:
                    raise JournalMismatch(
                        f"line {number} of {self.path} is damaged; delete the file to start over, or give another --out"
                    )
                size = len(raw) if raw is not None else len(lines[-1])
                self.notes.append(
                    f"{self.path.name}: dropped a torn last line ({size} bytes, a crash in mid-write); "
                    "its unit is computed again"
                )
                os.ftruncate(self.fd, good_end)
                break
            good_end += len(raw) + 1
            self.read_back += 1

    def _check_header(self, header: dict, options: dict) -> None:
        if header.get("journal") != FORMAT:
            raise JournalMismatch(f"{self.path} is not a journal of stamen certify; give another --out or delete it")
        if header.get("version") == VERSION and header.get("digest") == self.digest:
            return
        theirs = header.get("options") if isinstance(header.get("options"), dict) else {}
        mine = json.loads(json.dumps(options, default=str))
        differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        what = f"its options differ in: {', '.join(differ)}" if differ else "its data (graph, splits or kernel) differ"
        if header.get("version") != VERSION:
            what = f"it has format version {header.get('version')}, this Stamen writes {VERSION}"
        raise JournalMismatch(
            f"{self.path} is the journal of another certification ({what}); "
            "give another --out, or delete that file to start over"
        )

    def _take(self, unit: dict) -> bool:
        """Keep one unit line; ``False`` when it is not a whole unit."""
        try:
            arch = str(unit["arch"])
            if "target" in unit:
                self.targets.setdefault(arch, {})[int(unit["target"])] = TargetOutcome.from_dict(unit["outcome"])
            else:
                self.budgets.setdefault(arch, {})[int(unit["budget"])] = CollectiveOutcome.from_dict(unit["outcome"])
        except (KeyError, TypeError, ValueError, AttributeError):
            return False
        return True

    # ------------------------------------------------------------------ writing
    def _start(self, options: dict) -> None:
        header = {"journal": FORMAT, "version": VERSION, "digest": self.digest, "options": options}
        self._append(header)
        folder = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:  # the new file's name survives a power loss
            os.fsync(folder)
        finally:
            os.close(folder)

    def _append(self, line: dict) -> None:
        data = (json.dumps(line, default=str) + "\n").encode()
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        os.fsync(self.fd)

    def add_target(self, arch: str, position: int, node: int, outcome: TargetOutcome) -> None:
        """Append a decided target (sample-wise) and make it durable."""
        self._append({"arch": arch, "target": int(position), "node": int(node), "outcome": outcome.as_dict()})
        self.targets.setdefault(arch, {})[int(position)] = outcome

    def add_budget(self, arch: str, budget: int, outcome: CollectiveOutcome) -> None:
        """Append a decided budget (collective) and make it durable."""
        self._append({"arch": arch, "budget": int(budget), "outcome": outcome.as_dict()})
        self.budgets.setdefault(arch, {})[int(budget)] = outcome

    @property
    def units(self) -> int:
        """Units held (read back and added)."""
        return sum(map(len, self.targets.values())) + sum(map(len, self.budgets.values()))

    def units_on_disk(self) -> int:
        """Whole unit lines in the file now (what a resumed run finds, even after an interrupted append)."""
        try:
            return max(self.path.read_bytes().count(b"\n") - 1, 0)
        except FileNotFoundError:
            return 0

    def close(self) -> None:
        """Release the lock; the file stays (a later run resumes from it)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def remove(self) -> None:
        """Close and delete the journal (the final outputs now hold all of it)."""
        self.close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def _parse(raw: bytes | None) -> dict | None:
    """One line as a JSON object (``None``: torn or not an object)."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None
