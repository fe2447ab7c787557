"""What a long job of units shows on stderr while it works: units finished of all, time left.

On a terminal, one rich bar: the units finished of all (those kept from the journal count
from the start), the time elapsed and the time left (estimated from the units this process
ran). Elsewhere (a log, a pipe) one plain line per finished unit, with the same count and
estimate, so a log holds each line once; and while a unit runs, a line every
:data:`LINE_INTERVAL` seconds since the last one, so that a long unit is seen working.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

LINE_INTERVAL = 10.0  # seconds between two lines outside a terminal while a unit runs


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds < 600 else f"{seconds / 60:.0f} min"


def live_bar(console: Console, noun: str = "units"):  # rich.progress.Progress, imported here
    """A started rich bar on ``console``: description, bar, done of all, ``noun``, time elapsed and left.

    ``noun`` is the text after the count (a rich field such as ``{task.fields[noun]}`` too).
    """
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
    """Progress of one job of ``total`` units (a context manager); :meth:`finished` per unit.

    ``enabled=False`` shows nothing; ``interval``: the seconds between two lines outside a terminal.
    """

    interval: float = LINE_INTERVAL

    def __init__(self, console: Console, title: str, enabled: bool = True, interval: float | None = None) -> None:
        self.console = console
        self.title = title
        self.enabled = enabled
        if interval is not None:
            self.interval = interval
        self.total = 0
        self.done = 0
        self.kept = 0
        self.started = time.perf_counter()
        self.last_line = self.started
        self.progress = None
        self.bar = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> UnitProgress:
        if not self.enabled:
            return self
        if self.console.is_terminal:
            self.progress = live_bar(self.console)
        else:
            self._thread = threading.Thread(target=self._beat, daemon=True)
            self._thread.start()
        return self

    def _beat(self) -> None:
        """Outside a terminal: a line when ``interval`` seconds passed since the last one (after :meth:`begin`)."""
        while not self._stop.wait(min(0.5, max(self.interval, 0.05))):
            with self._lock:
                if self.total and time.perf_counter() - self.last_line >= self.interval:
                    self._line("working")

    def note(self, text: str) -> None:
        """One line (above the bar on a terminal)."""
        if self.enabled:
            self.console.print(f"[{self.title}] {text}", highlight=False, markup=False, soft_wrap=True)

    def begin(self, total: int, kept: int, say_kept: bool = True) -> None:
        """The job has ``total`` units, ``kept`` of them read back from its journal (``say_kept``: a line says so)."""
        with self._lock:
            self.total, self.kept, self.done = total, kept, kept
            self.started = self.last_line = time.perf_counter()
        if kept and say_kept:
            self.note(f"{kept} of {total} units kept from the journal; running the other {total - kept}")
        if self.progress is not None:
            self.bar = self.progress.add_task(self.title, total=total, completed=kept)

    def finished(self, line: str | None) -> None:
        """One more unit finished; ``line`` says what it measured (``None``: the caller printed that itself)."""
        with self._lock:
            self.done += 1
            if self.progress is not None and self.bar is not None:
                self.progress.advance(self.bar)
                if line is not None:
                    self.progress.update(self.bar, description=f"{self.title}: {line}"[:60])
            elif self.enabled:
                self._line(line)

    def _line(self, line: str | None) -> None:
        """``[title done/total] line; 1.0 min so far, about 2.0 min left``, the lock held."""
        elapsed, ran = time.perf_counter() - self.started, self.done - self.kept
        left = f"about {_minutes(elapsed / ran * (self.total - self.done))} left" if ran else "time left unknown"
        if self.total <= self.done:
            left = "none left"
        self.console.print(
            f"[{self.title} {self.done}/{self.total}] {f'{line}; ' if line else ''}{_minutes(elapsed)} so far, {left}",
            highlight=False,
            markup=False,
            soft_wrap=True,  # one line in a log, however long
        )
        self.last_line = time.perf_counter()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.progress is not None:
            self.progress.stop()
