"""A long command made of units: the units its journal kept, each new one kept and shown as it finishes.

:class:`LongJob` joins a :class:`stamen.experiments.journal.UnitJournal` (``None``: nothing is kept,
e.g. ``stamen audit privacy`` without ``--output``) and a :class:`stamen.experiments.unit_progress.UnitProgress`.
A command declares its units' keys (:meth:`LongJob.begin`), then for each unit either takes
the kept value or runs it (:meth:`LongJob.run`, or :meth:`LongJob.finish` for units that run
elsewhere, e.g. in worker processes). A finished unit is in the journal before anything else
happens; its value is what the journal reads back (plain JSON), so an uninterrupted job and a
resumed one build their output from the same values.

:func:`long_job` turns Ctrl-C (and SIGTERM, which the CLI makes a ``KeyboardInterrupt``) into
:class:`stamen.simulations.errors.RunInterrupted`: exit 130 and one line saying how many units were
kept and the command that resumes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from stamen.common.screen import output_console
from stamen.experiments.journal import UnitJournal
from stamen.experiments.unit_progress import UnitProgress
from stamen.simulations.errors import RunInterrupted


class LongJob:
    """The units of one run of a long command (see the module docstring)."""

    def __init__(self, journal: UnitJournal | None, screen: UnitProgress, command: str) -> None:
        self.journal = journal
        self.screen = screen
        self.command = command
        self.total: int | None = None
        self.ran = 0  # units run (not read back) by this process

    def begin(self, keys: list[str]) -> None:
        """The job's units, by key (unique); those the journal holds count as done from the start."""
        if len(set(keys)) != len(keys):
            repeated = sorted({key for key in keys if keys.count(key) > 1})
            raise ValueError(f"the same unit is asked for twice: {', '.join(repeated)}; name each setting once")
        self.total = len(keys)
        self.screen.begin(len(keys), sum(key in self for key in keys))

    def __contains__(self, key: str) -> bool:
        return self.journal is not None and key in self.journal.units

    def kept(self, key: str) -> Any:
        """The value of a unit the journal holds."""
        assert self.journal is not None
        return self.journal.units[key]

    def finish(self, key: str, value: Any, line: str) -> Any:
        """A unit just finished: keep it, show ``line``; returns its value as the journal holds it."""
        if self.journal is not None:
            value = self.journal.add(key, value)
        self.ran += 1
        self.screen.finished(line)
        return value

    def run(self, key: str, function: Callable[..., Any], *args: Any, line: Callable[[Any], str]) -> Any:
        """The kept value of ``key``, or ``function(*args)`` run now and kept (``line(value)`` shown)."""
        if key in self:
            return self.kept(key)
        value = function(*args)
        return self.finish(key, value, line(value))

    def kept_count(self) -> int:
        return len(self.journal.units) if self.journal is not None else 0

    def interrupted(self) -> RunInterrupted:
        """The error that ends an interrupted job: what was kept, and how to resume."""
        if self.journal is None:
            return RunInterrupted(f"interrupted after {self.ran} finished units; nothing is kept")
        of = f" of {self.total}" if self.total is not None else ""
        return RunInterrupted(
            f"interrupted: kept {self.kept_count()}{of} finished units in {self.journal.path}; "
            f"resume with: {self.command}"
        )


@contextlib.contextmanager
def long_job(journal: UnitJournal | None, title: str, command: str, show: bool = True) -> Iterator[LongJob]:
    """A :class:`LongJob` with its progress on stderr (``show=False``: none); Ctrl-C ends it as
    :class:`RunInterrupted`.

    The journal is closed (not removed) when the block fails or is interrupted; on success it
    stays open: the caller writes its output, then removes it.
    """

    with UnitProgress(output_console(stderr=True), title, enabled=show) as screen:
        for note in journal.notes if journal is not None else ():
            screen.note(note)
        job = LongJob(journal, screen, command)
        try:
            yield job
        except KeyboardInterrupt:
            if journal is not None:
                journal.close()
            raise job.interrupted() from None
        except BaseException:
            if journal is not None:
                journal.close()
            raise
