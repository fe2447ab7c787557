"""A run's progress on screen, read from its run directory as the rows arrive.

The ServerApp appends one row to ``metrics.jsonl`` per round; :class:`RunProgress` polls
that file (and nothing else) and shows the round, the time left, the current accuracy,
the clients that failed so far and, for a clustering algorithm (GCFL), its clusters and the
round of the last split. It works the same for every engine: the run's
processes need not know that anyone is watching.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from stamen.contract.figures import CLUSTER_SPLITS, CLUSTERS, GLOBAL_TEST_ACC, TEST_ACC


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


class RunProgress:
    """A progress bar of the run writing ``run_dir``: ``round r/N``, ETA, accuracy, failed clients.

    ``enabled=False`` shows nothing (``--quiet`` and ``--verbose`` runs).
    """

    def __init__(self, run_dir: Path, rounds: int, first_round: int = 0, enabled: bool = True) -> None:
        self.metrics = run_dir / "metrics.jsonl"
        self.rounds = rounds
        self.first_round = first_round
        self.enabled = enabled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> RunProgress:
        if not self.enabled:
            return self
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from stamen.simulations.screen import output_console

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[figures]}"),
            TimeRemainingColumn(),
            console=output_console(stderr=True),
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task("starting", total=self.rounds, completed=self.first_round, figures="")
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            self.update()

    def update(self) -> None:
        rows = read_rows(self.metrics)
        trained = [row for row in rows if row.get("round", 0) >= 1 and "clients" in row]
        if not trained:
            return
        last = trained[-1]
        accuracy = next((row.get(GLOBAL_TEST_ACC) for row in reversed(rows) if GLOBAL_TEST_ACC in row), None)
        if accuracy is None:
            accuracy = last.get(TEST_ACC)
        failed = sum(len(row.get("failed_clients", [])) for row in rows)
        figures = f"test acc {accuracy:.3f}" if accuracy is not None else ""
        if failed:
            figures += f", {failed} client replies failed"
        figures += clusters_text(rows)
        self.progress.update(self.task, description="round", completed=int(last["round"]), figures=figures)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if not self.enabled:
            return
        self._stop.set()
        self._thread.join()
        self.progress.stop()
