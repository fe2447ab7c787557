"""A study's tables: ``tune.json`` (with provenance), ``tune.csv``, ``tune.png`` and the table on screen.

Written after every trial (atomically: a reader sees the last whole table), from the study's
own records (:func:`stamen.experiments.tune.records`): every trial with its values, how it ended
(complete, pruned, failed, interrupted), its objective ``best_val_acc`` (the validation
accuracy at its best round; for a pruned or failed trial the best of the rounds it ran),
``test_acc_at_best_val`` beside it (never used to select), ``final_val_acc`` (a config that peaks
and then diverges shows there) and its run folder. The plot shows
each trial's objective and the best completed one so far, against the trial number.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table

from stamen.common.file_writes import atomic_write
from stamen.common.pictures import BLUE, ORANGE, VERMILLION, figure_bytes, new_figure
from stamen.common.screen import output_console
from stamen.contract import strict_json
from stamen.contract.figures import BEST_VAL_ACC, FINAL_VAL_ACC, TEST_ACC_AT_BEST_VAL
from stamen.contract.provenance import Provenance
from stamen.experiments.tune_trials import TrialOutcome, top_trials

if TYPE_CHECKING:
    from stamen.experiments.tune_trials import TrialRecord, TuneResult, TuneSpec


def write_outputs(folder: Path, spec: TuneSpec, found: list[TrialRecord]) -> None:
    """``tune.json``, ``tune.csv`` and ``tune.png`` of the trials ``found`` into ``folder``."""
    record = {
        "provenance": (spec.provenance or Provenance.of_process()).record(seeds=[spec.sampler_seed]),
        "setting": {**spec.setting(), "trials": spec.trials},
        "objective": f"maximise {BEST_VAL_ACC}: the headline validation accuracy at the run's best round",
        "trials": [trial.row() for trial in found],
        "top": [trial.number for trial in top_trials(found, spec.top)],
    }
    atomic_write(folder / "tune.json", strict_json.dumps(record, indent=2) + "\n")
    keys = [item.key for item in spec.space]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    header = [BEST_VAL_ACC, "best_round", TEST_ACC_AT_BEST_VAL, FINAL_VAL_ACC, "rounds", "run_dir", "repeat_of"]
    writer.writerow(["trial", "outcome", *keys, *header])
    for trial in found:
        writer.writerow(
            [trial.number, trial.outcome.value, *[trial.params.get(key, "") for key in keys]]
            + [_cell(trial.best_val_acc), _cell(trial.best_round), _cell(trial.test_acc_at_best_val)]
            + [_cell(trial.final_val_acc)]
            + [trial.rounds, trial.run_dir, _cell(trial.repeat_of)]
        )
    atomic_write(folder / "tune.csv", buffer.getvalue())
    _plot(folder, found)


def _cell(value: object) -> object:
    return "" if value is None else value


def _plot(folder: Path, found: list[TrialRecord]) -> None:
    figure = new_figure(7, 4.5)
    axes = figure.subplots()
    looks = (
        (TrialOutcome.COMPLETE, "o", BLUE),
        (TrialOutcome.PRUNED, "x", ORANGE),
        (TrialOutcome.FAILED, "v", VERMILLION),
    )
    for outcome, marker, colour in looks:
        points = [(t.number, t.best_val_acc) for t in found if t.outcome is outcome and t.best_val_acc is not None]
        if points:
            axes.scatter(*zip(*points), marker=marker, color=colour, label=f"{outcome.value} trial", alpha=0.8)
    best, steps = -math.inf, []
    for trial in found:
        if trial.outcome is TrialOutcome.COMPLETE and trial.best_val_acc is not None:
            best = max(best, trial.best_val_acc)
        if best > -math.inf:
            steps.append((trial.number, best))
    if steps:
        axes.step(*zip(*steps), where="post", color="black", label="best completed so far")
    axes.set(xlabel="trial", ylabel="validation accuracy at the best round", title=f"study {folder.name}")
    axes.xaxis.get_major_locator().set_params(integer=True)
    if found:
        axes.legend(fontsize=8)
    atomic_write(folder / "tune.png", figure_bytes(figure, "png"))


def print_table(result: TuneResult, spec: TuneSpec) -> None:
    """The best ``top`` completed trials, and how many trials ended how."""

    keys = [item.key for item in spec.space]
    table = Table(title=f"study {result.folder.name}: the best {len(result.top)} of {len(result.trials)} trials")
    for column in ("rank", "trial", *keys, "val acc (best round)", "best round", "test acc there", "final val acc"):
        table.add_column(column, justify="left" if column in keys else "right", overflow="fold")
    for rank, trial in enumerate(result.top, 1):
        values = [_value(trial.params.get(key)) for key in keys]
        test, final = (_figure(value) for value in (trial.test_acc_at_best_val, trial.final_val_acc))
        best = f"{trial.best_val_acc:.4f}"
        table.add_row(str(rank), str(trial.number), *values, best, str(trial.best_round), test, final)
    console = output_console()
    console.print(table)
    counts = Counter(trial.outcome.value for trial in result.trials)
    console.print(", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "no trials", highlight=False)
    files = ", ".join(str(result.folder / name) for name in ("tune.json", "tune.csv", "tune.png"))
    console.print(f"outputs: {files}", highlight=False)


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _value(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
