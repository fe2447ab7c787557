"""Stamen's ServerApp: check the run config, run the rounds, write the run's outputs."""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections.abc import Callable
from logging import ERROR, INFO

from flwr.app import Context
from flwr.common import log
from flwr.serverapp import Grid, ServerApp

from stamen.contract.figures import CLIENT_DP_EPSILON, TRAIN_LOSS, Row
from stamen.contract.provenance import Provenance
from stamen.contract.run_config import RunConfig
from stamen.contract.tasks import TASKS
from stamen.contract.tracking import missing_tracker
from stamen.server import outputs, privacy
from stamen.server.algorithms import server_algorithm
from stamen.server.certification import certify_federation
from stamen.server.checkpoint import (
    Checkpoint,
    checkpoint_bytes,
    load_checkpoint,
    resume_folder,
    write_checkpoint,
)
from stamen.server.divergence import DivergedError
from stamen.server.driver import Driver, build_driver
from stamen.server.loop import RunPruned, TooFewClientsError
from stamen.server.rundir import SUMMARY_FILE, RunDirectory, RunStatus, check_run_name, row_line
from stamen.server.runlock import writer_of
from stamen.server.runlog import run_log
from stamen.server.tracking import Ending, Tracking
from stamen.server.unlearning import unlearn_federation, unlearning_method
from stamen.server.writer import BehindWriter

app = ServerApp()


def check_run_config(values: dict) -> RunConfig:
    """The run config's one validation (:meth:`RunConfig.from_flower`: keys, types, ranges, names
    from the registries, rules between keys), plus ``run-name``'s path check; ValueError in one line."""
    config = RunConfig.from_flower(values)
    check_run_name(config.run_name)
    missing = missing_tracker(config.tracking)
    if missing:
        raise ValueError(missing)
    return config


SHOWN = (TRAIN_LOSS, "epsilon_max", CLIENT_DP_EPSILON)  # besides accuracies, in the round log


def format_table(summary: dict) -> str:
    rows = [("figure", "final", "best (val)")] + outputs.summary_table(summary)
    width = max(len(r[0]) for r in rows)
    lines = [f"{a:<{width}}  {b:>10}  {c:>10}" for a, b, c in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


@app.main()
def main(grid: Grid, context: Context) -> None:
    """The ServerApp under Flower (simulation or deployment): :func:`serve` on Flower's grid."""
    serve(grid, dict(context.run_config), flower_run_id=context.run_id, engine="flower")


def serve(
    grid: Grid,
    values: dict | RunConfig,
    *,
    flower_run_id: int | None = None,
    engine: str = "flower",
    observe: Callable[[Row], None] | None = None,
    provenance: Provenance | None = None,
) -> None:
    """Check everything, then start (or reopen) the run directory, train, report.

    ``values`` is Flower's run config (checked here, once per run) or, in process, the
    :class:`RunConfig` the command already checked (only ``run-name``'s path is checked again).

    Every transport runs this: Flower's grid (``flwr run``, deployments) and the
    in-process grid (``stamen run --engine inprocess``), so both write the same outputs.
    The run directory's lock (:mod:`stamen.server.runlock`) is held from before its checks to the
    last write: by this process, or by the command that started it and handed it its token.
    Nothing on disk changes before the run config, the privacy settings and the run
    directory (or the checkpoint to resume: its weights, sampler state and rows) passed
    their checks. From then on the run's ``status.json`` says where it stands: ``running``,
    then ``finished`` (with ``degraded`` set when clients failed) or ``failed`` with the error
    (e.g. training diverged: ``round 3: the global model's weights are not finite ...``).

    ``observe`` (in process) sees each round's row after it was handed to the writer; raising
    :class:`stamen.server.loop.RunPruned` there ends the run on purpose: status ``pruned``, the error re-raised.
    ``provenance``: who started the run, recorded in ``status.json`` and ``summary.json`` (``None``: this
    process's, :meth:`Provenance.of_process`: under Flower, the command that started it hands it down in the
    environment).
    """
    started = time.perf_counter()
    provenance = provenance or Provenance.of_process()
    with contextlib.ExitStack() as held:
        try:
            if isinstance(values, RunConfig):
                config = values
                check_run_name(config.run_name)
            else:
                config = check_run_config(values)
            if config.resume_from:
                held.enter_context(writer_of(resume_folder(config.resume_from)))  # then checked, under the lock
                run_dir, resume = resume_target(config)
            else:
                run_dir, resume = RunDirectory.plan(config), None
                held.enter_context(writer_of(run_dir.path))
                run_dir = RunDirectory.plan(dataclasses.replace(config, run_name=run_dir.path.name))  # under the lock
            driver = build_driver(config, grid)  # client-level DP asks a client for the initial weights
            if resume is not None:
                if resume.round >= config.num_server_rounds and _finished(run_dir):
                    log(INFO, "stamen: %s finished all %d rounds; nothing left to run", run_dir.path, resume.round)
                    return
                resume.check_weights(driver.initial or privacy.initial_arrays(grid, config.round_timeout))
                kept = run_dir.reopen(config, resume.round, provenance, flower_run_id=flower_run_id, engine=engine)
            else:
                kept = None
        except (ValueError, FileExistsError, FileNotFoundError) as error:
            log(ERROR, "error: %s", error)
            raise SystemExit(2) from error
        if resume is None:
            run_dir.create(config, provenance, flower_run_id=flower_run_id, engine=engine)
        held.enter_context(run_log(run_dir.path))  # run.log, whoever started this ServerApp
        try:
            summary = train_and_report(grid, driver, run_dir, resume, started, kept, observe, provenance)
        except RunPruned as pruned:
            run_dir.set_status(RunStatus.PRUNED, error=str(pruned), ended=time.time())
            raise
        except KeyboardInterrupt:
            run_dir.set_status(RunStatus.INTERRUPTED, error="interrupted", ended=time.time())
            raise
        except BaseException as error:
            reason = (
                str(error.__cause__ or error) if isinstance(error, SystemExit) else f"{type(error).__name__}: {error}"
            )
            cause = {"cause": "environment"} if isinstance(error, OSError) and error.errno is not None else {}
            run_dir.set_status(RunStatus.FAILED, error=reason, ended=time.time(), **cause)  # a full disk: exit 4
            raise
        run_dir.set_status(RunStatus.FINISHED, degraded=summary["degraded"], ended=time.time())


def _finished(run_dir: RunDirectory) -> bool:
    return run_dir.status().get("status") == RunStatus.FINISHED.value


def resume_target(config: RunConfig) -> tuple[RunDirectory, Checkpoint]:
    """The run directory and checkpoint ``resume-from`` names, checked against the run config.

    Checks everything a resume reads before it writes: the config (only the keys of
    :data:`stamen.server.rundir.RESUMABLE_KEYS` may change), the checkpoint (whole, its sampler
    state well formed, not beyond ``num-server-rounds``) and the rows it keeps (rounds
    before the checkpoint's, each once). The weights' shapes need the model: :func:`serve`
    checks them against the clients' initial model.
    """
    checkpoint = load_checkpoint(config.resume_from)  # read once: whole and consistent, or one line
    run_dir = RunDirectory(resume_folder(config.resume_from))
    run_dir.check_resume(config)
    if checkpoint.round > config.num_server_rounds:
        raise ValueError(
            f"resume-from={config.resume_from!r}: the checkpoint is at round {checkpoint.round}, beyond "
            f"num-server-rounds={config.num_server_rounds}; resume with num-server-rounds >= {checkpoint.round}"
        )
    run_dir.resume_rows(checkpoint.round)
    return run_dir, checkpoint


def train_and_report(
    grid: Grid,
    driver: Driver,
    run_dir: RunDirectory,
    resume: Checkpoint | None,
    started: float,
    kept: list[Row] | None = None,
    observe: Callable[[Row], None] | None = None,
    provenance: Provenance | None = None,
) -> dict:
    """The rounds, then the summary, model and curves, then the optional queries; returns the summary.

    ``grid`` is the transport's own (the unlearning queries' grid), ``driver`` the run's engine
    over it. ``kept``: a resumed run's rows before its checkpoint, which its first new row's
    write puts back in place of every later row (:meth:`RunDirectory.replace_rows`).
    """
    config = driver.config
    log(INFO, "stamen: writing run outputs to %s", run_dir.path)
    if resume is not None:
        log(INFO, "stamen: resuming from the checkpoint of round %d in %s", resume.round, run_dir.path)

    def on_row(row: Row) -> None:
        if driver.epsilon_after is not None and "clients" in row:
            row[CLIENT_DP_EPSILON] = driver.epsilon_after(row["round"])
        nonlocal kept
        line = row_line(row)
        if kept is not None:  # a resumed run's first new row: the rows from the checkpoint's round on go with it
            rows, kept = kept, None
            records.put(lambda: run_dir.replace_rows(rows, line))
        else:
            records.put(lambda: run_dir.append_line(line))
        if tracking.active:  # after the row's own write: never ahead of metrics.jsonl
            records.put(lambda: tracking.record_line(line))
        shown = {k: round(v, 4) for k, v in row.items() if k.endswith("acc") or k in SHOWN}
        log(INFO, "stamen: round %d/%d %s", row["round"], config.num_server_rounds, shown)
        if observe is not None:
            observe(row)
        if row["round"] < config.num_server_rounds:  # the clients have started: PyTorch's import can go beside
            outputs.import_torch_behind()

    def on_checkpoint(checkpoint: Checkpoint) -> None:
        checkpoint.sampler_state = list(random.getstate())
        data = checkpoint_bytes(checkpoint)
        records.put(lambda: write_checkpoint(run_dir.path, data))

    initial, history = driver.initial, None
    if config.unlearn_request and unlearning_method(config.unlearn_method).needs_history:  # record updates
        # on use: torch stays out of this module's import
        from stamen.unlearn.federaser import UpdateHistory

        if initial is None:  # the replay starts from the seeded initial model: the server must know it
            initial = privacy.initial_arrays(grid, config.round_timeout)
        history = UpdateHistory(initial.to_torch_state_dict())
    tracking = Tracking.open(config, run_dir.path, run_dir.status(), resume.round if resume is not None else None)
    if tracking.status_fields():
        run_dir.set_status(RunStatus.RUNNING, **tracking.status_fields())
    records = BehindWriter()  # each round's row and checkpoint, written while the next round runs
    ending = Ending.FAILED
    try:
        with records:
            arrays = driver.run(on_row, resume=resume, on_checkpoint=on_checkpoint, history=history, initial=initial)
        ending = Ending.FINISHED
    except KeyboardInterrupt:
        ending = Ending.KILLED
        raise
    except TooFewClientsError as error:  # the checkpoint of the last full round stays for resume-from
        log(ERROR, "error: %s; resume later with resume-from='%s'", error, run_dir.path)
        raise SystemExit(2) from error
    except DivergedError as error:  # recorded as failed with this one line (serve), no traceback
        log(ERROR, "error: %s", error)
        raise SystemExit(1) from error
    finally:
        tracking.close(ending)
    rows = run_dir.rows()
    summary = outputs.summarize(rows, time.perf_counter() - started, config)
    summary["run_dir"] = str(run_dir.path)
    summary["provenance"] = (provenance or Provenance.of_process()).record(seeds=[config.seed])
    run_dir.write_json(SUMMARY_FILE, summary)
    if len(arrays) > 0:
        outputs.save_model(run_dir.path, outputs.torch_state_dict(arrays), config)
    title = outputs.run_title(run_dir.path.name, config, summary["clients"])
    outputs.plot_curves(run_dir.path, rows, title, TASKS[config.task].headline)
    if config.budgets():
        summary["certificates"] = certify_federation(grid, config, run_dir.path)["budgets"]
        run_dir.write_json(SUMMARY_FILE, summary)
    if config.unlearn_request:
        try:
            result, _ = unlearn_federation(
                grid,
                config,
                arrays,
                server_algorithm(config.algorithm).make_strategy,
                driver.aggregates,
                run_dir.path,
                summary["wall_seconds"],
                history=history,
            )
        except RuntimeError as error:
            log(ERROR, "error: %s", error)
            raise SystemExit(2) from error
        summary["unlearning"] = result.summary()
        run_dir.write_json(SUMMARY_FILE, summary)
    log(INFO, "stamen: results of %s\n%s", run_dir.path, format_table(summary))
    if "privacy" in summary:
        log(INFO, "stamen: privacy spent\n%s", outputs.privacy_table(summary["privacy"], summary.get("task")))
    return summary
