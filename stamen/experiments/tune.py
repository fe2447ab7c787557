r"""``stamen tune``'s study: Optuna's TPE over run-config keys, one in-process run per trial, resumable.

A study lives in its folder ``<out>/<name>/``: the Optuna study ``study.db`` (SQLite, Optuna's
RDB storage: each trial's start, reported rounds and end are transactions, so a killed study
loses at most its running trial and never a finished one; a JournalStorage file would be
append-only JSON as well, but a torn last line of it is Optuna's to repair, not ours), one run
directory per trial (``trial-0007/``, as ``stamen run`` writes it), and the study's tables
``tune.json``, ``tune.csv`` and ``tune.png`` (:mod:`stamen.experiments.tune_outputs`). The folder's
lock (:mod:`stamen.server.runlock`) is held for the study's life: one writer.

Objective. Trial :math:`t` trains the run config with the trial's values and is scored by
its own records: :math:`\max_r \mathrm{val}_t(r)`, the headline validation accuracy
(:func:`stamen.contract.figures.headline`: the global model's where there is one) at the round of best
validation accuracy, the run summary's ``best`` round. Test accuracy is recorded beside it
(``test_acc_at_best_val``) and never used to select.

Pruning. Each round's validation accuracy is reported to the trial as the row is written
(:func:`stamen.server.app.serve`'s ``observe``); Optuna's ``MedianPruner`` stops a trial whose best
value so far lies below the median of the finished trials at that round (after
``prune_startup`` finished trials and ``prune_warmup`` rounds). A pruned trial's run stops
there, is kept, and its ``status.json`` says ``pruned`` with the round and the reason.

Seeds and resuming. The sampler of the trial that is the :math:`k`-th to count is
``TPESampler(seed=s_k)``, :math:`s_k` drawn from ``SeedSequence([sampler_seed, k])``: its values
depend on the seed, :math:`k` and the trials before it only, so the same command gives the same
trials, and a study resumed with ``--trials N`` (N in all) gives those an uninterrupted one
would. A trial whose values equal a completed or failed trial's is told that trial's result and
marked ``repeat_of`` (same config and seed, same numbers: TPE over ``cat`` values proposes repeats).
A trial counts when it completed, was pruned or failed (e.g. training diverged: its
values stay out of the model's choices); one stopped by Ctrl-C (or a kill, found ``running`` when
the study is opened again) does not count and is run again. The study's setting (space,
run config, clients, sampler and pruner) is recorded in the study: resuming it with another
is refused, in one line.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stamen.common.screen import output_console
from stamen.contract.figures import BEST_VAL_ACC, FINAL_VAL_ACC, TEST_ACC_AT_BEST_VAL, headline
from stamen.contract.provenance import Provenance
from stamen.contract.run_config import MAX_ROUNDS, RunConfig
from stamen.contract.tracking_group import group_of, tracking_group
from stamen.experiments.tune_outputs import print_table, write_outputs
from stamen.experiments.tune_space import UNSEARCHABLE, check_space
from stamen.experiments.tune_trials import TrialOutcome, TrialRecord, TuneResult, TuneSpec, top_trials
from stamen.experiments.unit_progress import UnitProgress
from stamen.server.loop import RunPruned
from stamen.server.rundir import RunDirectory, check_output_dir, check_run_name
from stamen.server.runlock import FolderLock
from stamen.simulations.errors import RunFailed, RunInterrupted, one_line
from stamen.simulations.federation_config import FederationConfig
from stamen.simulations.preflight import default_run_config, prepare_mapping

STUDY_FILE = "study.db"
MAX_TRIALS = 1_000_000  # a trial is a whole run with a folder of its own: far beyond any study's worth
STUDY_NAME = "stamen"
SETTING_ATTR = "stamen_setting"


def run_tune(spec: TuneSpec, show: bool = True, provenance: Provenance | None = None) -> TuneResult:
    """Check everything, then run (or resume) the study ``spec`` in ``<out>/<name>``; write its tables.
    ``provenance``: who started it (``None``: ``spec``'s, else this process's).

    Raises:
        ValueError: bad input (the command's exit 2), before any trial and before anything is written.
        FolderLocked: another process writes the study.
        RunInterrupted: Ctrl-C; the finished trials are kept, the tables written, the command resumes.
    """

    spec = dataclasses.replace(spec, provenance=provenance or spec.provenance or Provenance.of_process())
    _check(spec)
    name = spec.name or time.strftime("tune-%Y%m%d-%H%M%S")
    check_run_name(name)
    folder = check_output_dir(spec.out) / name
    _check_folder(folder)
    _probe(spec, folder)
    optuna = _optuna()
    with FolderLock(folder, "tune folder"):
        _check_folder(folder)  # again, under the lock
        folder.mkdir(parents=True, exist_ok=True)
        study = _open(optuna, spec, folder)
        return _study(optuna, study, spec, folder, show)


def _check(spec: TuneSpec) -> None:

    fixed = spec.run_config
    for key in fixed:
        if key in UNSEARCHABLE[1:]:
            raise ValueError(f"-c {key}=...: stamen tune names its trials' folders itself; use --out and --name")
    check_space(spec.space, fixed)
    whole = (("--trials", spec.trials, 1, MAX_TRIALS), ("--top", spec.top, 1, MAX_TRIALS),
             ("--sampler-seed", spec.sampler_seed, 0, 2**32 - 1), ("--startup", spec.startup, 0, MAX_TRIALS),
             ("--prune-startup", spec.prune_startup, 0, MAX_TRIALS),
             ("--prune-warmup", spec.prune_warmup, 0, MAX_ROUNDS))  # fmt: skip
    for what, value, low, high in whole:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{what} must be a whole number >= {low}, got {value!r}")
        if value > high:
            raise ValueError(f"{what} must be at most {high:,}, got {value}")


def _check_folder(folder: Path) -> None:
    """A study's folder is new, or one ``stamen tune`` made (it holds ``study.db``): never another's files."""
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is a file; choose another --name or --out")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / STUDY_FILE).is_file():
        raise ValueError(f"{folder} exists and holds no {STUDY_FILE}: not a study; choose another --name or --out")


def _probe(spec: TuneSpec, folder: Path) -> None:
    """Every value that bounds the space, in the fixed run config (the rules between keys included), then one
    whole run's checks with the data (:func:`stamen.simulations.preflight.prepare`): all before anything is written."""
    base = default_run_config()
    base.update(spec.run_config)
    if not (base.get("val-frac", 0) or 0) > 0:
        raise ValueError("stamen tune selects on validation accuracy: val-frac must be > 0 (the run config has 0)")
    firsts = {item.key: item.values()[0] for item in spec.space}
    for item in spec.space:
        for value in item.values():
            try:
                RunConfig.from_flower({**base, **firsts, item.key: value})
            except ValueError as error:
                raise ValueError(f"--space {item.text()}: with {item.key}={value!r}: {error}") from None
    prepare_mapping(_values(spec, folder, "trial-probe", firsts), spec.federation_config)


def _values(spec: TuneSpec, folder: Path, run_name: str, params: dict[str, Any]) -> dict[str, Any]:
    """The run-config keys of one trial: the fixed ones, then its folder and searched values."""
    return {**spec.run_config, "output-dir": str(folder), "run-name": run_name, **params}


def _seed(values: dict[str, Any]) -> int:
    """The runs' seed the run-config keys give (``seed``, else its default)."""

    return int(values.get("seed", RunConfig().seed))


def _optuna() -> Any:
    try:
        # on use: optuna stays out of this module's import
        import optuna
    except ImportError:
        raise ValueError("stamen tune needs Optuna: pip install 'stamen[tune]'") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def _open(optuna: Any, spec: TuneSpec, folder: Path) -> Any:
    """The study in ``folder`` (made if new); its setting must be the spec's. Trials left ``running`` (a study
    killed mid-trial) are marked failed and interrupted: they do not count."""
    existed = (folder / STUDY_FILE).is_file()
    try:
        storage = optuna.storages.RDBStorage(f"sqlite:///{folder / STUDY_FILE}")
        study = optuna.create_study(
            study_name=STUDY_NAME,
            storage=storage,
            direction="maximize",
            load_if_exists=True,
            pruner=_pruner(optuna, spec),
        )
    except Exception as error:  # SQLAlchemy's or Optuna's own, for a database that is damaged or not a study
        if not existed:
            raise
        reason = " ".join(str(error).splitlines()[0].split()) or type(error).__name__
        raise ValueError(
            f"{folder / STUDY_FILE} is not a study Stamen can read ({reason[:200]}); move it away to start the "
            "study afresh, or give another --name"
        ) from None
    recorded = study.user_attrs.get(SETTING_ATTR)
    setting = spec.setting()
    if recorded is None:
        study.set_user_attr(SETTING_ATTR, setting)
    elif recorded != setting:
        changed = next(key for key in setting if recorded.get(key) != setting[key])
        raise ValueError(
            f"{folder} is a study with another {changed} ({recorded.get(changed)!r}); give the same to "
            "resume it, or another --name"
        )
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        storage.set_trial_user_attr(trial._trial_id, "outcome", TrialOutcome.INTERRUPTED.value)
        storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.FAIL)
    return study


def _pruner(optuna: Any, spec: TuneSpec) -> Any:
    if not spec.prune:
        return optuna.pruners.NopPruner()
    return optuna.pruners.MedianPruner(n_startup_trials=spec.prune_startup, n_warmup_steps=spec.prune_warmup)


def _sampler(optuna: Any, spec: TuneSpec, counted: int) -> Any:
    # on use: numpy stays out of this module's import
    import numpy as np

    seed = int(np.random.SeedSequence([spec.sampler_seed, counted]).generate_state(1)[0])
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=spec.startup, constant_liar=False)


def _study(optuna: Any, study: Any, spec: TuneSpec, folder: Path, show: bool) -> TuneResult:
    distributions = {item.key: item.distribution() for item in spec.space}
    counted = sum(record.outcome is not TrialOutcome.INTERRUPTED for record in records(study))
    if show:
        print(f"stamen tune: {spec.trials} trials in {folder} ({min(counted, spec.trials)} done already)", flush=True)
    try:  # the trials' count and time left on stderr: a bar on a terminal, a line per trial and every 10 s elsewhere
        with UnitProgress(output_console(stderr=True), "tune", enabled=show) as screen:
            screen.begin(spec.trials, min(counted, spec.trials), say_kept=False)  # said above
            while counted < spec.trials:
                study.sampler = _sampler(optuna, spec, counted)
                trial = study.ask(distributions)
                earlier = _same_values(study, trial)
                done = _trial(optuna, study, trial, spec, folder) if earlier is None else _repeat(study, trial, earlier)
                counted += 1
                write_outputs(folder, spec, records(study))
                if show:
                    print(f"  trial {trial.number}: {done} {_shown(trial.params)}", flush=True)
                screen.finished(None)  # the trial's own line is the one above, on standard output
    finally:  # Ctrl-C included: the tables hold every trial that finished
        found = records(study)
        write_outputs(folder, spec, found)
    result = TuneResult(folder, found, top_trials(found, spec.top))
    if show:
        print_table(result, spec)
    return result


def _trial(optuna: Any, study: Any, trial: Any, spec: TuneSpec, folder: Path) -> str:
    """Run ``trial`` and tell the study how it ended; returns a few words saying so."""
    # on use: flwr, numpy stay out of this module's import
    from stamen.simulations.runner import Engine, run

    run_name = f"trial-{trial.number:04d}"
    trial.set_user_attr("run_dir", str(folder / run_name))
    observe = _observer(optuna, trial, spec)
    state = optuna.trial.TrialState
    values = _values(spec, folder, run_name, trial.params)
    group = group_of("study", folder.name, folder, {"trial": trial.number, **trial.params}, _seed(values))
    try:
        with tracking_group(group):  # one MLflow experiment for the study, a run per trial
            launched = run(
                RunConfig.from_mapping(values),
                federation=FederationConfig.from_mapping(spec.federation_config),
                engine=Engine.INPROCESS,
                provenance=spec.provenance or Provenance.of_process(),
                observe=observe,
            )
    except RunPruned as pruned:
        trial.set_user_attr("outcome", TrialOutcome.PRUNED.value)
        trial.set_user_attr("error", str(pruned))
        study.tell(trial, state=state.PRUNED)
        return f"pruned ({pruned})"
    except RunFailed as failed:
        trial.set_user_attr("outcome", TrialOutcome.FAILED.value)
        trial.set_user_attr("error", one_line(failed))
        study.tell(trial, state=state.FAIL)
        return f"failed ({one_line(failed)})"
    except (RunInterrupted, KeyboardInterrupt):
        trial.set_user_attr("outcome", TrialOutcome.INTERRUPTED.value)
        study.tell(trial, state=state.FAIL)
        done = sum(r.outcome is not TrialOutcome.INTERRUPTED for r in records(study))
        raise RunInterrupted(
            f"interrupted; the study in {folder} keeps its {done} finished trial(s) (trial {trial.number}'s run "
            "is marked interrupted and will be run again): give the same command to go on"
        ) from None
    summary = RunDirectory(launched.run_dir).summary()
    value = headline(summary.get("best", {}), "val")
    trial.set_user_attr("best_round", summary.get("best_round"))
    trial.set_user_attr(TEST_ACC_AT_BEST_VAL, headline(summary.get("best", {})))
    trial.set_user_attr(FINAL_VAL_ACC, headline(summary.get("final", {}), "val"))
    if value is None or not math.isfinite(value):
        trial.set_user_attr("outcome", TrialOutcome.FAILED.value)
        trial.set_user_attr("error", "the run recorded no finite validation accuracy")
        study.tell(trial, state=state.FAIL)
        return "failed (no validation accuracy)"
    trial.set_user_attr("outcome", TrialOutcome.COMPLETE.value)
    study.tell(trial, float(value))
    return f"{BEST_VAL_ACC} {value:.4f} (round {summary.get('best_round')})"


def _same_values(study: Any, trial: Any) -> Any:
    """The first completed or failed trial with ``trial``'s values (a pruned one was stopped by the pruner's view
    of its time, so its values run again), or None."""
    for earlier in study.get_trials(deepcopy=False):
        outcome = earlier.user_attrs.get("outcome")
        if outcome in (TrialOutcome.COMPLETE, TrialOutcome.FAILED) and earlier.number != trial.number:
            if earlier.params == trial.params and "repeat_of" not in earlier.user_attrs:
                return earlier
    return None


def _repeat(study: Any, trial: Any, earlier: Any) -> str:
    """``trial`` has ``earlier``'s values: the same config and seed give the same numbers (on every engine, every
    time), so it is told ``earlier``'s result and marked ``repeat_of`` instead of training the same run again."""
    for step, value in sorted(earlier.intermediate_values.items()):
        trial.report(value, step)
    for key, value in earlier.user_attrs.items():
        trial.set_user_attr(key, value)
    trial.set_user_attr("repeat_of", earlier.number)
    state = earlier.state if earlier.value is None else None
    study.tell(trial, earlier.value, state=state)
    return f"same values as trial {earlier.number}: its result, not run again"


def _observer(optuna: Any, trial: Any, spec: TuneSpec) -> Callable[[dict], None]:
    """Each round's headline validation accuracy reported to ``trial``; the pruner may end the run there."""
    # on use: flwr, numpy stay out of this module's import
    from stamen.server.loop import RunPruned

    best = -math.inf

    def observe(row: dict) -> None:
        nonlocal best
        value, step = headline(row, "val"), int(row.get("round", 0))
        if value is None or not math.isfinite(value) or step < 1:
            return
        best = max(best, float(value))
        trial.report(best, step)  # the best so far: what the trial's objective would be if it ended here
        if spec.prune and trial.should_prune():
            raise RunPruned(
                f"pruned by stamen tune after round {step}: best validation accuracy so far {best:.4f} is below "
                "the median of the earlier trials at that round"
            )

    return observe


def records(study: Any) -> list[TrialRecord]:
    """Every trial of ``study`` but the one running, as :class:`TrialRecord`, by number."""
    found = []
    for trial in study.get_trials(deepcopy=False):
        outcome = trial.user_attrs.get("outcome")
        if outcome is None:
            continue  # the trial now running
        steps = trial.intermediate_values
        found.append(
            TrialRecord(
                number=trial.number,
                outcome=TrialOutcome(outcome),
                params=dict(trial.params),
                best_val_acc=trial.value if trial.value is not None else (max(steps.values()) if steps else None),
                best_round=trial.user_attrs.get("best_round"),
                test_acc_at_best_val=trial.user_attrs.get(TEST_ACC_AT_BEST_VAL),
                final_val_acc=trial.user_attrs.get(FINAL_VAL_ACC),
                rounds=max(steps, default=0),
                run_dir=trial.user_attrs.get("run_dir", ""),
                error=trial.user_attrs.get("error", ""),
                repeat_of=trial.user_attrs.get("repeat_of"),
            )
        )
    return found


def _shown(params: dict[str, Any]) -> str:
    return " ".join(
        f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}" for key, value in params.items()
    )
