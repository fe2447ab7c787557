"""A run's progress on screen, read from its run directory as the rows arrive.

The ServerApp appends one row to ``metrics.jsonl`` per round; :class:`RunProgress` polls
that file (and nothing else) and shows the round, the time left, the current accuracy,
the clients that failed so far and, for a clustering algorithm (GCFL), its clusters and the
round of the last split. It works the same for every engine: the run's
processes need not know that anyone is watching.

On a terminal it is a rich bar. Elsewhere (a pipe, a file) it prints a plain line (no escape
codes, no carriage returns) when the first round's row arrives, then whenever
:data:`LINE_INTERVAL` seconds passed since the last line, and once at the end:
``round 12/200, test acc 0.812, elapsed 0:00:10, ETA 0:02:30``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from stamen.common.screen import output_console
from stamen.contract.figures import CLUSTER_SPLITS, CLUSTERS, GLOBAL_TEST_ACC, TEST_ACC

LINE_INTERVAL = 10.0  # seconds between two progress lines outside a terminal
POLL_SECONDS = 0.5  # how often metrics.jsonl is read


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The complete rows of a ``metrics.jsonl`` being written (a half-written last line is left for later)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    rows = []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def clusters_text(rows: list[dict[str, Any]]) -> str:
    """``, 3 clusters (split in round 4)`` for the rows of a clustering algorithm, ``""`` for any other."""
    clustered = [row for row in rows if CLUSTERS in row]
    if not clustered:
        return ""
    count = len(clustered[-1][CLUSTERS])
    split = [row["round"] for row in rows if row.get(CLUSTER_SPLITS)]
    return f", {count} cluster{'s' if count != 1 else ''}" + (f" (split in round {split[-1]})" if split else "")


def round_figures(rows: list[dict[str, Any]]) -> tuple[int, str] | None:
    """The last trained round of ``rows`` and its figures (``test acc 0.812, 1 client replies failed``);
    ``None`` before the first round's row."""
    trained = [row for row in rows if row.get("round", 0) >= 1 and "clients" in row]
    if not trained:
        return None
    last = trained[-1]
    accuracy = next((row.get(GLOBAL_TEST_ACC) for row in reversed(rows) if GLOBAL_TEST_ACC in row), None)
    if accuracy is None:
        accuracy = last.get(TEST_ACC)
    failed = sum(len(row.get("failed_clients", [])) for row in rows)
    figures = f"test acc {accuracy:.3f}" if accuracy is not None else ""
    if failed:
        figures += f", {failed} client replies failed"
    figures += clusters_text(rows)
    return int(last["round"]), figures


def clock(seconds: float) -> str:
    """``0:02:30`` for 150 seconds."""
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


class RunProgress:
    """The progress of the run writing ``run_dir``: ``round r/N``, ETA, accuracy, failed clients.

    A bar on a terminal, a plain line every ``interval`` seconds elsewhere (see the module docstring).
    ``enabled=False`` shows nothing (``--quiet`` and ``--verbose`` runs).
    """

    interval: float = LINE_INTERVAL

    def __init__(
        self, run_dir: Path, rounds: int, first_round: int = 0, enabled: bool = True, interval: float | None = None
    ) -> None:
        self.metrics = run_dir / "metrics.jsonl"
        self.rounds = rounds
        self.first_round = first_round
        self.enabled = enabled
        if interval is not None:
            self.interval = interval
        self.terminal = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._started = time.monotonic()
        self._seen: tuple[float, int] | None = None  # when the first row was read, and its round
        self._printed: tuple[float, int] | None = None  # when the last plain line was printed, and its round

    def __enter__(self) -> RunProgress:
        if not self.enabled:
            return self

        console = output_console(stderr=True)
        self.terminal = console.is_terminal
        self._started = time.monotonic()
        if self.terminal:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[figures]}"),
                TimeRemainingColumn(),
                console=console,
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("starting", total=self.rounds, completed=self.first_round, figures="")
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.update()

    def update(self) -> None:
        state = round_figures(read_rows(self.metrics))
        if state is None:
            return
        done, figures = state
        if self.terminal:
            self.progress.update(self.task, description="round", completed=done, figures=figures)
            return
        now = time.monotonic()
        if self._seen is None:
            self._seen = (now, done)
        if self._printed is None or now - self._printed[0] >= self.interval:
            self._line(now, done, figures)

    def _line(self, now: float, done: int, figures: str) -> None:
        """One plain line: the round, the figures, the time since the start and the time left."""
        assert self._seen is not None
        seen_at, seen_round = self._seen
        if done > seen_round:  # the pace of the rounds since the first row read, start-up left out
            per_round: float | None = (now - seen_at) / (done - seen_round)
        elif seen_round > self.first_round:
            per_round = (seen_at - self._started) / (seen_round - self.first_round)
        else:
            per_round = None
        left = "-" if per_round is None else clock(per_round * max(0, self.rounds - done))
        parts = [f"round {done}/{self.rounds}", *([figures] if figures else [])]
        parts += [f"elapsed {clock(now - self._started)}", f"ETA {left}"]
        print(", ".join(parts), file=sys.stderr, flush=True)
        self._printed = (now, done)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if not self.enabled:
            return
        self._stop.set()
        self._thread.join()
        if self.terminal:
            self.progress.stop()
            return
        state = round_figures(read_rows(self.metrics))
        if state is not None and (self._printed is None or self._printed[1] != state[0]):  # the last round, once
            now = time.monotonic()
            if self._seen is None:
                self._seen = (now, state[0])
            self._line(now, *state)
