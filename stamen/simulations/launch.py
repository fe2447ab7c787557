"""Launch one run on an engine: check everything first, then run it on the in-process engine or on Flower's.

:func:`launch` is ``stamen run``'s one path, for the command (:mod:`stamen.cli.commands.run`) and for
:func:`stamen.run` alike; :func:`simulate` runs a prepared run (:mod:`stamen.simulations.preflight`) on
``inprocess`` or ``flower`` (a simulation SuperLink of its own, optionally joining a Ray cluster) and
judges its outcome from the run directory's ``status.json``, written by this run only (its token).
"""

from __future__ import annotations

import io
import logging
import os
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from stamen.common.registry import check_engine
from stamen.contract.algorithms import ALGORITHMS
from stamen.models.names import MODEL_SPECS
from stamen.server.app import serve
from stamen.server.loop import RunPruned
from stamen.server.rundir import RunDirectory, RunStatus, run_token
from stamen.server.runlock import FolderLock
from stamen.simulations.cluster import ray_address
from stamen.simulations.errors import EnvironmentFailed, RunFailed, RunInterrupted, os_error_line
from stamen.simulations.flower import LocalSuperLink, PeakMemory, flower_home, flwr_run
from stamen.simulations.inprocess import InProcessGrid, task_identity
from stamen.simulations.preflight import PreparedRun, prepare
from stamen.simulations.progress import RunProgress

ENGINES = ("flower", "inprocess")


def simulate(
    run: PreparedRun,
    mode: str = "progress",
    resume_hint: str = "",
    engine: str = "flower",
    together: bool = True,
    observe: Callable[[dict], None] | None = None,
) -> dict:
    """Run one prepared run on ``engine``; return its summary (as written in its run directory).

    ``flower``: ``flwr run`` on a simulation SuperLink of our own; ``inprocess``: the same
    ServerApp (:func:`stamen.server.app.serve`) and ClientApp in this process
    (:class:`stamen.simulations.inprocess.InProcessGrid`). ``mode``: ``progress`` shows a
    progress bar, ``verbose`` streams the log to the terminal, ``quiet`` shows nothing; the
    ServerApp keeps the run's log in its run directory (``run.log``, :mod:`stamen.server.runlog`) in
    every mode. ``together=False``: the in-process engine answers the clients' messages in
    turn (see :class:`stamen.simulations.inprocess.InProcessGrid`). The summary gains
    ``total_wall_seconds`` and ``peak_memory_gb`` (the largest resident memory of every
    process of the run: for ``flower`` the SuperLink and all its descendants). ``observe``: the
    in-process engine hands it each round's row (:func:`stamen.server.app.serve`); its
    :class:`stamen.server.loop.RunPruned` ends the run, recorded ``pruned``, and is raised here.

    Raises:
        RunFailed: the run failed, or never started; the message says why and where the logs are.
        RunInterrupted: Ctrl-C or SIGTERM; every process of the run was stopped first.
    """
    run_dir = run.run_dir
    started = time.perf_counter()
    with run_token() as token, FolderLock(run_dir.path):  # held for the run's ServerApp too (stamen/server/runlock.py)
        if not run.config.resume_from:  # checked again under the lock: another run may have taken the name since
            RunDirectory.plan(run.config)
        first_round = _resumed_round(run)
        progress = RunProgress(run_dir.path, run.config.num_server_rounds, first_round, enabled=mode == "progress")
        try:
            if engine == "inprocess":
                with progress:
                    memory, log, error = _serve_in_process(
                        run, verbose=mode == "verbose", together=together, observe=observe
                    )
                outcome = run_dir.outcome(token)
                if isinstance(error, RunPruned) and outcome is not None:  # ended on purpose, recorded `pruned`
                    raise error
                if error is not None and (outcome is None or outcome["status"] == RunStatus.RUNNING.value):
                    raise error  # refused before it started, or its status could not be written (a full disk)
                if isinstance(error, OSError):  # a full disk mid-run: one line, what to do, how to go on
                    raise EnvironmentFailed(_os_failure(run_dir, error, resume_hint))
                _judge(run_dir, token, _where(run_dir, token, log))
            else:
                if observe is not None:
                    raise ValueError("observing a run's rows needs the in-process engine")
                with flower_home() as home:  # kept, with Flower's logs, when the run failed
                    log_file = home / "run.log"  # flwr run's stream; the ServerApp writes the run's run.log itself
                    env = run.environment()  # the cluster to join, the head's partition digest
                    with progress, LocalSuperLink(home, extra=env) as superlink, PeakMemory(superlink.pid) as memory:
                        code = flwr_run(
                            home,
                            run.config.to_flower(),
                            run.federation,
                            log=log_file,
                            echo=mode == "verbose",
                            extra=env,
                        )
                    where = f"see {run_dir.path / 'run.log'}" if run_dir.outcome(token) else f"see {log_file}"
                    _judge(run_dir, token, f"flwr exit code {code}; {where}; Flower's own logs: {home}")
        except KeyboardInterrupt:  # every process of the run was stopped on the way out
            raise RunInterrupted(_interrupted(run_dir, token, resume_hint)) from None
        summary = run_dir.summary()
        summary.update({"total_wall_seconds": time.perf_counter() - started, "peak_memory_gb": memory.peak_gb})
        run_dir.write_json("summary.json", summary)
    return summary


def _resumed_round(run: PreparedRun) -> int:
    resumed = run.config.resume_from and (run.run_dir.path / "metrics.jsonl").is_file()
    rows = run.run_dir.rows(torn_last_ok=True) if resumed else []
    return max((int(row.get("round", 0)) for row in rows), default=0)


def _serve_in_process(
    run: PreparedRun, verbose: bool, together: bool = True, observe: Callable[[dict], None] | None = None
) -> tuple[PeakMemory, str, BaseException | None]:
    """The ServerApp over the in-process grid; returns its memory, its log (empty when it went to the
    terminal) and the error that ended it (the reason itself for a refusal: the ServerApp's exit 2 carries it).

    A failure is judged from the run's status, as a Flower run's is.
    """

    logger = logging.getLogger("flwr")
    handlers, buffer = list(logger.handlers), io.StringIO()
    if not verbose:
        for handler in handlers:
            logger.removeHandler(handler)
        captured = logging.StreamHandler(buffer)
        captured.setFormatter(logging.Formatter("%(levelname)s %(asctime)s: %(message)s"))
        logger.addHandler(captured)
    grid = InProcessGrid(run.config, int(run.federation["num-supernodes"]), together=together)
    error: BaseException | None = None
    try:
        with PeakMemory(os.getpid()) as memory, task_identity():
            try:
                serve(grid, run.config, engine="inprocess", observe=observe)
            except SystemExit as stop:  # recorded in status.json (or the run never started): judged next
                error = stop.__cause__ or stop
            except Exception as failure:
                error = failure
    finally:
        if not verbose:
            logger.removeHandler(captured)
            for handler in handlers:
                logger.addHandler(handler)
    return memory, buffer.getvalue(), error


def _where(run_dir: RunDirectory, token: str, log: str) -> str:
    """Where an in-process run's log is: its ``run.log`` when this command's run wrote its folder, else (the
    ServerApp stopped before: a run.log there is another command's) the captured log's last line itself."""
    if not log:
        return "see the log above"
    if run_dir.outcome(token) is not None:
        return f"see {run_dir.path / 'run.log'}"
    return log.strip().splitlines()[-1]


def _judge(run_dir: RunDirectory, token: str, where: str) -> None:
    """Raise :class:`RunFailed` unless this command's run finished (its token, status ``finished``)."""
    outcome = run_dir.outcome(token)
    if outcome is None:
        raise RunFailed(f"the run did not start ({where})")
    if outcome["status"] == RunStatus.RUNNING.value:
        run_dir.set_status(RunStatus.FAILED, error=f"the ServerApp ended without finishing ({where})")
        raise RunFailed(f"the ServerApp ended without finishing ({where})")
    if outcome["status"] != RunStatus.FINISHED.value:
        failed = EnvironmentFailed if outcome.get("cause") == "environment" else RunFailed
        raise failed(f"the run {outcome['status']}: {outcome.get('error', 'no reason recorded')}")


def _os_failure(run_dir: RunDirectory, error: OSError, resume_hint: str) -> str:
    """A run that an OS error ended (the ServerApp recorded it as failed): the error in one line, then how to go on."""
    if not (run_dir.path / "checkpoint.npz").is_file():
        return os_error_line(error)
    return f"{os_error_line(error)}; then resume with: {resume_hint} -c \"resume-from='{run_dir.path}'\""


def _interrupted(run_dir: RunDirectory, token: str, resume_hint: str) -> str:
    """Mark this command's run interrupted (if it started) and say how to go on."""
    if run_dir.outcome(token) is None:
        return "interrupted before the run started; nothing was written"
    run_dir.set_status(RunStatus.INTERRUPTED, error="interrupted (Ctrl-C or SIGTERM)", ended=time.time())
    if not (run_dir.path / "checkpoint.npz").is_file():
        return f"interrupted before the first round finished; {run_dir.path} holds no checkpoint to resume"
    return f"interrupted; resume with: {resume_hint} -c \"resume-from='{run_dir.path}'\""


@dataclass(frozen=True)
class Launched:
    """What :func:`launch` did: the run directory, and the summary (``None`` when nothing was left to run)."""

    run_dir: Path
    rounds: int
    summary: dict | None

    @property
    def nothing_left(self) -> bool:
        """A resumed run that had already finished all its rounds: nothing ran."""
        return self.summary is None


def launch(
    run_config: Sequence[str],
    federation_config: Sequence[str],
    *,
    engine: str = "flower",
    in_turn: bool = False,
    mode: str = "progress",
    announce: Callable[[PreparedRun, str], None] | None = None,
    observe: Callable[[dict], None] | None = None,
    ray_address: str | None = None,
) -> Launched:
    """``stamen run``'s one path, for the command and for :func:`stamen.run` alike: check, then run.

    ``run_config``/``federation_config``: ``-c`` and ``--federation-config`` items (``key=value``
    strings; run-config items may name experiment files). Every check runs first
    (:func:`stamen.simulations.preflight.prepare`; ValueError in one line); ``announce(run, engine)`` is
    called after the checks, before the run starts; ``mode``, ``in_turn`` and ``observe`` (in process only)
    as for :func:`simulate`. ``ray_address``: the Ray cluster the flower engine's simulation joins
    (``None``: ``$RAY_ADDRESS`` if set; :mod:`stamen.simulations.cluster`).

    Raises:
        ValueError: bad input (the command's exit 2), before anything is written.
        RunFailed, RunInterrupted: as :func:`simulate`.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if in_turn and engine != "inprocess":
        raise ValueError("--in-turn applies to the in-process engine only; add --engine inprocess or drop it")
    if observe is not None and engine != "inprocess":
        raise ValueError("observing a run's rows needs the in-process engine (engine='inprocess')")
    address = ray_address_for(engine, ray_address)
    run = prepare(list(run_config), list(federation_config), ray_address=address)
    check_engine({"algorithm": (ALGORITHMS, run.config.algorithm), "model": (MODEL_SPECS, run.config.model)}, engine)
    rounds = run.config.num_server_rounds
    if run.nothing_left:
        return Launched(run.run_dir.path, rounds, None)
    if announce is not None:
        announce(run, engine)
    hint = "stamen run " + " ".join(
        [f"--engine {engine}"] * (engine != "flower")
        + ["--in-turn"] * in_turn
        + [f"--ray-address {shlex.quote(address)}"] * bool(address)
        + [f"-c {shlex.quote(c)}" for c in run_config]
        + [f"--federation-config {shlex.quote(f)}" for f in federation_config]
    )
    summary = simulate(run, mode, hint.strip(), engine, together=not in_turn, observe=observe)
    return Launched(run.run_dir.path, rounds, summary)


def ray_address_for(engine: str, option: str | None) -> str:
    """The cluster a run on ``engine`` joins (``""``: none); ``--ray-address`` with the in-process engine is refused."""
    if option and engine != "flower":
        raise ValueError("--ray-address applies to the flower engine only; drop it or add --engine flower")
    return ray_address(option) if engine == "flower" else ""
