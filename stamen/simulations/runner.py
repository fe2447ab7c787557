"""One federated run, typed: :func:`run` takes a :class:`RunConfig` and gives a :class:`RunResult`.

The one entry of every run that Stamen starts: ``stamen run`` (its ``-c`` items parsed into a
:class:`RunConfig` at the command line), :func:`stamen.run` (a dict made a :class:`RunConfig` by
:meth:`RunConfig.from_mapping`), sweeps, searches and benches. :func:`run` checks everything a run can
check before it starts (:func:`stamen.simulations.preflight.prepare_config`; ValueError in one line), then
trains on the engine asked for (:func:`simulate`): ``flower``, ``flwr run`` on a simulation SuperLink of
its own (the one place the config becomes Flower's ``--run-config`` mapping), or ``inprocess``, the same
ServerApp and ClientApp in this process. Who started the run (:class:`Provenance`) is an argument,
recorded in the run directory.
"""

from __future__ import annotations

import enum
import io
import logging
import os
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from flwr.serverapp import Grid

from stamen.contract.provenance import Provenance
from stamen.contract.run_config import RunConfig
from stamen.server.app import serve
from stamen.server.loop import RunPruned
from stamen.server.rundir import RunDirectory, RunStatus, run_token
from stamen.server.runlock import FolderLock
from stamen.simulations.cluster import ray_address
from stamen.simulations.errors import EnvironmentFailed, RunFailed, RunInterrupted, os_error_line
from stamen.simulations.federation_config import FederationConfig
from stamen.simulations.flower import LocalSuperLink, PeakMemory, flower_home, flwr_run, run_config_overrides
from stamen.simulations.overrides import override_text
from stamen.simulations.preflight import PreparedRun, prepare_config
from stamen.simulations.progress import RunProgress


class Engine(enum.Enum):
    """Where a run trains."""

    FLOWER = "flower"
    """``flwr run`` on a local simulation SuperLink (or a Ray cluster)."""
    INPROCESS = "inprocess"
    """The same ServerApp and ClientApp in this process."""

    @classmethod
    def named(cls, name: str | Engine) -> Engine:
        """The engine called ``name``; ValueError in one line for another name."""
        if isinstance(name, Engine):
            return name
        names = {engine.value: engine for engine in cls}
        if name not in names:
            raise ValueError(f"engine must be one of {', '.join(names)}, got {name!r}")
        return names[name]


class ProgressMode(enum.Enum):
    """What a run shows while it trains (its log is kept in its ``run.log`` in every mode)."""

    PROGRESS = "progress"
    """A progress bar."""
    VERBOSE = "verbose"
    """The full log on the terminal."""
    QUIET = "quiet"
    """Nothing."""


@dataclass(frozen=True)
class RunResult:
    """What :func:`run` did: the run directory, its rounds, and its summary (``None``: nothing was left to run).

    Attributes:
        run_dir: the run directory.
        rounds: the rounds the run trains to (``num-server-rounds``).
        summary: ``summary.json`` with ``total_wall_seconds`` and ``peak_memory_gb``; ``None`` for a resumed
            run that had already finished all its rounds.
    """

    run_dir: Path
    rounds: int
    summary: dict | None

    @property
    def nothing_left(self) -> bool:
        """A resumed run that had already finished all its rounds: nothing ran."""
        return self.summary is None


def run(
    config: RunConfig,
    *,
    federation: FederationConfig,
    engine: Engine = Engine.FLOWER,
    provenance: Provenance,
    progress: ProgressMode = ProgressMode.QUIET,
    in_turn: bool = False,
    ray_address: str | None = None,
    resume_hint: str = "",
    announce: Callable[[PreparedRun, Engine], None] | None = None,
    observe: Callable[[dict], None] | None = None,
) -> RunResult:
    """Check, then train one run; the one path of ``stamen run``, :func:`stamen.run`, sweeps, searches and benches.

    Args:
        config: the run config (its ``output-dir`` and ``run-name`` say where the run directory goes).
        federation: the clients (``num_supernodes``) and their resources.
        engine: :attr:`Engine.FLOWER` or :attr:`Engine.INPROCESS`.
        provenance: who started the run (the command, the code version), recorded in its run directory.
        progress: what the run shows while it trains.
        in_turn: in-process engine: each client's message answered alone (otherwise the clients of a round
            that run FedAvg's local training train together; the same numbers).
        ray_address: flower engine: the Ray cluster to join (``None``: ``$RAY_ADDRESS`` if set, else a Ray
            instance of the run's own; :mod:`stamen.simulations.cluster`).
        resume_hint: the command that repeats this run, for the messages that say how to resume it
            (default: ``stamen run`` with the config's keys that differ from their defaults).
        announce: called with the checked run and the engine before it starts.
        observe: in-process engine: sees each round's row; :class:`stamen.server.loop.RunPruned` raised
            there ends the run, recorded ``pruned``.

    Raises:
        ValueError: bad input, before anything is written (the command's exit 2).
        RunFailed, EnvironmentFailed, RunInterrupted: as :func:`simulate`.
    """
    if in_turn and engine is not Engine.INPROCESS:
        raise ValueError("--in-turn applies to the in-process engine only; add --engine inprocess or drop it")
    if observe is not None and engine is not Engine.INPROCESS:
        raise ValueError("observing a run's rows needs the in-process engine (engine='inprocess')")
    if engine is Engine.INPROCESS:  # the in-process grid is built by the Flower adapter: another Flower, one line
        try:
            # on use: the adapter's package checks the installed Flower as it loads, before anything is written
            from stamen.simulations.flower_internals import version

            version.check_flower_version()  # and again where the adapter was loaded before
        except RuntimeError as error:  # UnsupportedFlower, named by the adapter freshly imported
            raise ValueError(str(error)) from None
    address = ray_address_for(engine, ray_address)
    prepared = prepare_config(config, federation, ray_address=address, engine=engine.value)
    rounds = prepared.config.num_server_rounds
    if prepared.nothing_left:
        return RunResult(prepared.run_dir.path, rounds, None)
    if announce is not None:
        announce(prepared, engine)
    hint = resume_hint or resume_command(config, federation, engine, in_turn, address)
    summary = simulate(
        prepared,
        progress.value,
        hint,
        engine.value,
        together=not in_turn,
        observe=observe,
        provenance=provenance,
    )
    return RunResult(prepared.run_dir.path, rounds, summary)


def ray_address_for(engine: Engine | str, option: str | None) -> str:
    """The cluster a run on ``engine`` joins (``""``: none); ``--ray-address`` with the in-process engine is refused."""
    flower = Engine.named(engine) is Engine.FLOWER
    if option and not flower:
        raise ValueError("--ray-address applies to the flower engine only; drop it or add --engine flower")
    return ray_address(option) if flower else ""


def resume_command(
    config: RunConfig, federation: FederationConfig, engine: Engine, in_turn: bool = False, address: str = ""
) -> str:
    """``stamen run`` with the options and the config keys (those not at their defaults) that repeat this run."""
    changed = run_config_overrides(config)
    usual = FederationConfig().to_flower()
    federation_keys = {
        key: value
        for key, value in federation.to_flower().items()
        if key != "num-supernodes" and usual.get(key) != value
    }
    words = (
        [f"--engine {engine.value}"] * (engine is not Engine.FLOWER)
        + ["--in-turn"] * in_turn
        + [f"--ray-address {shlex.quote(address)}"] * bool(address)
        + [f"--clients {federation.num_supernodes}"]
        + [f"--federation-config {shlex.quote(override_text(federation_keys))}"] * bool(federation_keys)
        + [f"-c {shlex.quote(override_text(changed))}"] * bool(changed)
    )
    return " ".join(["stamen run", *words])


def simulate(
    run: PreparedRun,
    mode: str = "progress",
    resume_hint: str = "",
    engine: str = "flower",
    together: bool = True,
    observe: Callable[[dict], None] | None = None,
    provenance: Provenance | None = None,
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
    ``provenance``: who started the run, recorded in its run directory (``None``: this process,
    :meth:`Provenance.of_process`); the Flower engine's ServerApp gets it in its environment.

    Raises:
        RunFailed: the run failed, or never started; the message says why and where the logs are.
        RunInterrupted: Ctrl-C or SIGTERM; every process of the run was stopped first.
    """
    run_dir = run.run_dir
    origin = provenance or Provenance.of_process()
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
                        run, verbose=mode == "verbose", together=together, observe=observe, provenance=origin
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
                    # the cluster to join, the head's partition digest; the ServerApp's provenance
                    env = {**run.environment(), **origin.environment()}
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
    run: PreparedRun,
    verbose: bool,
    together: bool = True,
    observe: Callable[[dict], None] | None = None,
    provenance: Provenance | None = None,
) -> tuple[PeakMemory, str, BaseException | None]:
    """The ServerApp over the in-process grid; returns its memory, its log (empty when it went to the
    terminal) and the error that ended it (the reason itself for a refusal: the ServerApp's exit 2 carries it).

    A failure is judged from the run's status, as a Flower run's is.
    """
    # on use: the Flower adapter's version check runs as the run starts, where its refusal is one line
    from stamen.simulations.inprocess import InProcessGrid, task_identity

    logger = logging.getLogger("flwr")
    handlers, buffer = list(logger.handlers), io.StringIO()
    if not verbose:
        for handler in handlers:
            logger.removeHandler(handler)
        captured = logging.StreamHandler(buffer)
        captured.setFormatter(logging.Formatter("%(levelname)s %(asctime)s: %(message)s"))
        logger.addHandler(captured)
    grid = InProcessGrid(run.config, run.num_clients, together=together)
    error: BaseException | None = None
    try:
        with PeakMemory(os.getpid()) as memory, task_identity():
            try:
                # the in-process grid is a Grid by its methods (stamen.simulations.inprocess), not by its class
                serve(cast("Grid", grid), run.config, engine="inprocess", observe=observe, provenance=provenance)
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
