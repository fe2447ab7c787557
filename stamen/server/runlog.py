"""``run.log``: a run's own log in its run directory, written by the ServerApp on every transport.

The ServerApp logs through Flower's ``flwr`` logger (Stamen's ``stamen: ...`` lines beside
Flower's own of the same process). While a run trains, :func:`run_log` adds a handler that
appends each record to ``<run-dir>/run.log``, and hands the records of Stamen's own loggers (the
``stamen`` tree: ``stamen.algorithms.gcfl.server``'s splits, ``stamen.client``'s device fallback; ``INFO`` and
above unless the ``stamen`` logger was given a level) to Flower's logger, so that they go where
Flower's lines go, run.log included, each once: ``stamen run`` on either engine, a plain
``flwr run``, ``stamen deploy local`` and a deployment all leave the same file, whoever
started the ServerApp and wherever its console output went. A resumed run appends to it.

Records are written as plain text: Flower's console handler colours the level name with
ANSI escape codes, and a message may carry some (a relayed client log); :func:`strip_ansi`,
the one function every log Stamen writes or relays goes through (:mod:`stamen.simulations.relay`),
removes them. The file is opened with ``O_NOFOLLOW`` (never through a link put in its place),
like ``metrics.jsonl``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

RUN_LOG = "run.log"
FORMAT = "%(levelname)s %(asctime)s: %(message)s"
# CSI sequences (colours, cursor moves), the two-byte escapes, and a lone ESC
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]|\x1b")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences (colours and the like)."""
    return ANSI.sub("", text)


class PlainFormatter(logging.Formatter):
    """A formatter whose lines carry no ANSI escape codes."""

    def format(self, record: logging.LogRecord) -> str:
        return strip_ansi(super().format(record))


STAMEN_LOGGER = "stamen"  # the logger tree of Stamen's own modules


class HandOn(logging.Handler):
    """Hands each record to ``target``'s handlers (and its ancestors'), as if logged there (so only at a level
    ``target`` is enabled for: an in-process experiment that quiets Flower quiets these too)."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        if self.target.isEnabledFor(record.levelno):
            self.target.handle(record)


@contextlib.contextmanager
def run_log(folder: Path, logger: str = "flwr") -> Iterator[None]:
    """Append ``logger``'s records, and those of the ``stamen`` loggers, to ``folder/run.log``, plain, until the
    block ends (see the module docstring)."""
    fd = os.open(folder / RUN_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    stream = os.fdopen(fd, "a", encoding="utf-8", errors="replace")
    handler = logging.StreamHandler(stream)
    handler.setFormatter(PlainFormatter(FORMAT))
    target = logging.getLogger(logger)
    target.addHandler(handler)
    own = logging.getLogger(STAMEN_LOGGER)
    hand_on, level, propagate = HandOn(target), own.level, own.propagate
    own.addHandler(hand_on)
    own.propagate = False  # the records reach the root through ``logger``: once
    if level == logging.NOTSET:
        own.setLevel(logging.INFO)
    try:
        yield
    finally:
        own.setLevel(level)
        own.propagate = propagate
        own.removeHandler(hand_on)
        target.removeHandler(handler)
        handler.close()
        stream.close()
