"""Targets decided on several worker processes, with answers that do not depend on how many.

A sample-wise certificate is a function :math:`o_t = \\mathrm{decide}(\\mathrm{ctx}, t)` of a
shared, read-only context (kernel blocks, clean model, the results of a shared sweep) and
the target's position :math:`t` alone: caches inside the context change the speed, never a
value (every retraining is warm-started from the clean dual and stops on the KKT residual;
HiGHS runs single-threaded with a fixed seed). So the outcomes are the same for every number
of workers and every order of completion (apart from timings).

:func:`run_targets` hands positions to ``workers`` processes (``spawn``: no forked solver or
BLAS state; one target per task, the unit of a MILP solve) and calls ``on_done`` **in this
process** as each outcome arrives, so the journal (:mod:`stamen.certify.journal`) keeps one writer.
Each worker runs single-threaded BLAS (the thread variables are set in its environment
before it starts, so NumPy reads them on import) and ignores ``SIGINT``: Ctrl-C reaches
this process, which terminates the workers and re-raises. ``workers = 1`` decides in
this process, in order. As with every ``spawn`` pool, a script that calls this with
``workers > 1`` guards its top level with ``if __name__ == "__main__":`` (each worker
imports the main module).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

#: thread-count variables of the BLAS/OpenMP libraries NumPy, SciPy and HiGHS may load
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)

_WORKER: dict[str, Any] = {}


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(os.cpu_count() or 1, 1)


@contextmanager
def _single_threaded_env() -> Iterator[None]:
    """Set every thread variable to 1 while worker processes are started (a ``spawn`` worker takes this process's
    environment, and no other way in: it imports NumPy before any initializer runs); restored as it was after."""
    kept = {name: os.environ.get(name) for name in THREAD_VARS}
    os.environ.update({name: "1" for name in THREAD_VARS})
    try:
        yield
    finally:
        for name, value in kept.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _init(decide: Callable[[Any, int], Any], context: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent hears Ctrl-C and ends the workers
    if "torch" in sys.modules:  # pragma: no cover - only when a parent module pulled torch in
        sys.modules["torch"].set_num_threads(1)
    _WORKER["decide"], _WORKER["context"] = decide, context


def _one(position: int) -> Any:
    return _WORKER["decide"](_WORKER["context"], position)


def run_targets(
    decide: Callable[[Any, int], Any],
    context: Any,
    positions: Iterable[int],
    workers: int,
    on_done: Callable[[Any], None],
) -> None:
    """``on_done(decide(context, p))`` for every position ``p``, on up to ``workers`` processes.

    ``decide`` must be a module-level function and ``context`` picklable. Outcomes arrive
    in completion order (``workers = 1``: in order, in this process). An exception in a
    worker, or Ctrl-C here, terminates the workers and propagates.
    """
    positions = list(positions)
    workers = max(1, min(int(workers), len(positions)))
    if workers == 1:
        for p in positions:
            on_done(decide(context, p))
        return
    with _single_threaded_env():
        pool = multiprocessing.get_context("spawn").Pool(workers, initializer=_init, initargs=(decide, context))
    try:
        for outcome in pool.imap_unordered(_one, positions, chunksize=1):
            on_done(outcome)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()


def decide_in_order(
    decide: Callable[[Any, int], Any],
    context: Any,
    positions: list[int],
    workers: int,
    on_target: Callable[[Any], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[Any]:
    """:func:`run_targets`, with each outcome (which has a ``position``) passed to ``on_target`` and counted
    by ``progress`` as it arrives; returns the outcomes in the order of ``positions``."""
    results: dict[int, Any] = {}

    def done(outcome: Any) -> None:
        results[outcome.position] = outcome
        if on_target is not None:
            on_target(outcome)
        if progress is not None:
            progress(1)

    run_targets(decide, context, positions, workers, done)
    return [results[position] for position in positions]
