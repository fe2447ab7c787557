"""What a long job of units shows on stderr while it works: units finished of all, time left.

On a terminal, one rich bar: the units finished of all (those kept from the journal count
from the start), the time elapsed and the time left (estimated from the units this process
ran). Elsewhere (a log, a pipe) one line per finished unit, with the same count and
estimate, so a log holds each line once.
"""

from __future__ import annotations

import time
from types import TracebackType

from rich.console import Console


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds < 600 else f"{seconds / 60:.0f} min"


def live_bar(console: Console, noun: str = "units"):  # rich.progress.Progress, imported here
    """A started rich bar on ``console``: description, bar, done of all, ``noun``, time elapsed and left.

    ``noun`` is the text after the count (a rich field such as ``{task.fields[noun]}`` too).
    """
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(noun),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    progress.start()
    return progress


class UnitProgress:
    """Progress of one job of ``total`` units (a context manager); :meth:`finished` per unit."""

    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.title = title
        self.total = 0
        self.done = 0
        self.kept = 0
        self.started = time.perf_counter()
        self.progress = None
        self.bar = None

    def __enter__(self) -> UnitProgress:
        if self.console.is_terminal:
            self.progress = live_bar(self.console)
        return self

    def note(self, text: str) -> None:
        """One line (above the bar on a terminal)."""
        self.console.print(f"[{self.title}] {text}", highlight=False, markup=False, soft_wrap=True)

    def begin(self, total: int, kept: int) -> None:
        """The job has ``total`` units, ``kept`` of them read back from its journal."""
        self.total, self.kept, self.done = total, kept, kept
        self.started = time.perf_counter()
        if kept:
            self.note(f"{kept} of {total} units kept from the journal; running the other {total - kept}")
        if self.progress is not None:
            self.bar = self.progress.add_task(self.title, total=total, completed=kept)

    def finished(self, line: str) -> None:
        """One more unit finished; ``line`` says what it measured."""
        self.done += 1
        if self.progress is not None and self.bar is not None:
            self.progress.advance(self.bar)
            self.progress.update(self.bar, description=f"{self.title}: {line}"[:60])
            return
        elapsed, ran = time.perf_counter() - self.started, self.done - self.kept
        left = elapsed / ran * (self.total - self.done) if ran and self.total > self.done else 0.0
        self.console.print(
            f"[{self.title} {self.done}/{self.total}] {line}; {_minutes(elapsed)} so far, about {_minutes(left)} left",
            highlight=False,
            markup=False,
            soft_wrap=True,  # one line in a log, however long
        )

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.progress is not None:
            self.progress.stop()
