"""A deployed run followed to its end by its status, not by ``flwr run``'s log stream.

``flwr run --stream`` exits 0 whenever its log stream ends: Flower 1.42 takes the stream's
end for "all logs retrieved" (``flwr/cli/log.py``). The SuperLink can also end the stream while
the run goes on: with 10 SuperNodes on 2 loaded cores its state database was locked, a
request was answered with HTTP 500, and the stream stopped in round 1. A command that took
``flwr run``'s exit for the run's end then tore the deployment down mid-round (the ServerApp
logged "Task stopped by user"), or told its user the run was done.

:class:`RunIdSink` keeps the id of the run ``flwr run`` started (a sink of
:func:`stamen.simulations.relay.relay`); :func:`follow_run` asks for the run's status until the
SuperLink says it finished, and notes in the log when it had to wait.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import TextIO

RUN_STARTED = re.compile(r"Successfully started run (\d+)")  # what ``flwr run`` prints of the run it started
STATUS_WAIT = 10.0  # seconds between looks at a run whose log stream ended early (each look starts a flwr CLI)
COMPLETED = "finished:completed"


class RunIdSink:
    """A relay sink that keeps the id of the run ``flwr run`` says it started."""

    def __init__(self) -> None:
        self.run_id: int | None = None

    def write(self, text: str) -> None:
        if self.run_id is None and (found := RUN_STARTED.search(text)):
            self.run_id = int(found.group(1))

    def flush(self) -> None:
        pass


def follow_run(status: Callable[[], str], run_id: int, sinks: Sequence[TextIO]) -> int:
    """Wait until ``status()`` (the SuperLink's ``flwr ls --run-id``) says run ``run_id`` finished:
    0 for ``finished:completed``, 1 for another end.

    A run's stream ends a moment before the SuperLink records it finished, so only a run still
    unfinished at the second look is noted in ``sinks`` as followed; any end but a completed one
    is noted too.
    """
    looks = 0
    while True:
        try:
            now = status()
        except TimeoutError:  # a SuperLink too busy to answer: ask again
            now = "unknown"
        looks += 1
        if now.startswith("finished"):
            if looks > 2 or now != COMPLETED:
                _note(sinks, f"stamen: run {run_id} {now}")
            return 0 if now == COMPLETED else 1
        if looks == 2:
            _note(
                sinks,
                f"stamen: flwr run's log stream ended while run {run_id} is {now}; waiting for it to finish "
                "(the run folder's run.log has its whole log)",
            )
        time.sleep(STATUS_WAIT)


def _note(sinks: Sequence[TextIO], line: str) -> None:
    for sink in sinks:
        sink.write(line + "\n")
        sink.flush()
