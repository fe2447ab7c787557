"""``stamen compare RUN_OR_SWEEP...``: several runs or sweep groups in one table and one plot.

Each argument is a run directory (``stamen run``'s output) or a sweep folder
(``stamen sweep``'s; each of its configs becomes one line, mean +- std over seeds).
The table shows, per line: algorithm, dataset, clients, rounds, the final and
best-validation test accuracy, the spread over clients and the wall time; ``--plot FILE``
writes their test-accuracy curves overlaid, each labelled by the config values that set it
apart from the others (``algorithm=fedprox, lr=0.05``), not by its folder's name, and titled
with what they share.
"""

from __future__ import annotations

import argparse
import json
import statistics
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.ticker import MaxNLocator
from rich.table import Table

from stamen.common.pictures import DASHES, PALETTE, figure_bytes, new_figure
from stamen.common.screen import output_console
from stamen.contract import strict_json
from stamen.contract.algorithms import Headline, headline_of
from stamen.contract.equivalences import notes_once
from stamen.contract.figures import (
    FINAL_CLIENTS_TEST,
    FINAL_GLOBAL_TEST,
    GLOBAL_TEST_ACC,
    TEST_ACC,
    model_figure,
)
from stamen.contract.tasks import DEFAULT_TASK
from stamen.experiments.sweep import HEADLINE_COLUMN, HEADLINE_MARK, HEADLINE_NOTE, spec_headline
from stamen.server.rundir import RunDirectory, atomic_write


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="several runs or sweep groups side by side: one table, overlaid curves",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="RUN_OR_SWEEP", help="run directories or sweep folders")
    parser.add_argument("--plot", type=Path, default=None, help="write the overlaid curves to this .png file")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    parser.set_defaults(func=main)


@dataclass
class Line:
    """One line of the comparison: a run, or a sweep config's runs."""

    name: str
    runs: list[Path]
    summaries: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)  # the first run's config.json
    over_seeds: bool = False  # a sweep config's runs: its seeds are averaged, not a difference

    def values(self) -> dict[str, Any]:
        """The config values that could set this line apart (not where it is written, nor an averaged seed)."""
        skipped = PLACE_KEYS | ({"seed"} if self.over_seeds else set())
        return {key: value for key, value in self.config.items() if key not in skipped}

    def headline(self) -> Headline:
        """Which model's figures are this line's algorithm's headline (its spec's)."""
        return headline_of(self.summaries[0].get("algorithm") if self.summaries else None)

    def figure(self, part: str) -> list[float]:
        values = []
        for summary in self.summaries:
            value = spec_headline(summary.get(part, {}), summary.get("algorithm"))
            if value is not None:
                values.append(value)
        return values

    def row(self) -> dict[str, Any]:
        first = self.summaries[0]
        out: dict[str, Any] = {
            "line": self.name,
            "runs": len(self.runs),
            "algorithm": first.get("algorithm"),
            "headline": self.headline().value,
            "dataset": first.get("dataset"),
            "clients": first.get("clients"),
            "rounds": first.get("rounds"),
        }
        for part in ("final", "best"):
            values = self.figure(part)
            out[f"{part}_test_acc"] = statistics.fmean(values) if values else None
            out[f"{part}_test_acc_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
        for key, global_model in ((FINAL_GLOBAL_TEST, True), (FINAL_CLIENTS_TEST, False)):  # side by side
            found = [model_figure(s.get("final", {}), global_model) for s in self.summaries]
            values = [value for value in found if value is not None]
            out[key] = statistics.fmean(values) if values else None
            out[f"{key}_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
        worst = [s["fairness"]["min"] for s in self.summaries if s.get("fairness")]
        out["worst_client_acc"] = statistics.fmean(worst) if worst else None
        walls = [s.get("total_wall_seconds", s.get("wall_seconds")) for s in self.summaries]
        out["wall_seconds"] = statistics.fmean([w for w in walls if w is not None]) if any(walls) else None
        return out


PLACE_KEYS = {"run-name", "output-dir", "overwrite", "resume-from", "tensorboard", "data-root"}


def plot_labels(lines: list[Line]) -> tuple[list[str], str]:
    """Each line's label: the config values in which the lines differ (a sweep config's marked as a mean over
    its seeds; its name where none differ, or where two lines would still share a label), and the title's
    note of what every line shares."""
    keys = sorted({key for line in lines for key in line.values()})
    differing = [key for key in keys if len({repr(line.values()[key]) for line in lines if key in line.values()}) > 1]
    labels = []
    for line in lines:
        label = ", ".join(f"{key}={line.values()[key]}" for key in differing if key in line.values()) or line.name
        labels.append(f"{label} (mean over seeds)" if line.over_seeds and len(line.runs) > 1 else label)
    twice = {label for label in labels if labels.count(label) > 1}
    labels = [
        f"{line.name}: {label}" if label in twice and label != line.name else label
        for line, label in zip(lines, labels, strict=True)
    ]
    first = lines[0].values() if lines else {}
    shared = [key for key in ("algorithm", "model", "dataset", "privacy") if key in first and key not in differing]
    return labels, ", ".join(f"{key} {first[key]}" for key in shared)


def lines_of(path: Path) -> list[Line]:
    """The lines one argument stands for (one for a run, one per config for a sweep)."""
    if (path / "sweep.json").is_file():
        record = json.loads((path / "sweep.json").read_text())
        return [
            Line(f"{path.name}: {group['config']}", [path / run["run"] for run in group["runs"]], over_seeds=True)
            for group in record["groups"]
            if group["runs"]
        ]
    run = RunDirectory.open(path)
    status = run.status().get("status", "finished")
    if status != "finished":
        raise ValueError(f"{path} is {status}, not finished; compare finished runs")
    return [Line(path.name, [path])]


def main(args: argparse.Namespace) -> int:
    lines = [line for text in args.paths for line in lines_of(Path(text).expanduser())]
    for line in lines:
        line.summaries = [RunDirectory(run).summary() for run in line.runs]
        line.config = RunDirectory(line.runs[0]).config()
    _one_task(lines)
    rows = [line.row() for line in lines]
    if args.plot is not None:
        _plot(lines, args.plot)
        if not args.json:
            print(f"wrote {args.plot}")
    if args.json:
        print(strict_json.dumps(rows, indent=2))
        return 0
    _print(rows)
    for note in notes_once((line.name, [n for s in line.summaries for n in s.get("notes", [])]) for line in lines):
        print(f"note: {note}")
    return 0


def _one_task(lines: list[Line]) -> None:
    """Lines of different tasks have different headline figures (accuracy, AUC): one column cannot hold both."""
    tasks: dict[str, list[str]] = {}
    for line in lines:
        tasks.setdefault(str(line.config.get("task", DEFAULT_TASK)), []).append(line.name)
    if len(tasks) > 1:
        named = "; ".join(f"{task}: {', '.join(names)}" for task, names in tasks.items())
        raise ValueError(f"these runs learn different tasks ({named}), whose figures differ; compare runs of one task")


def _print(rows: list[dict[str, Any]]) -> None:

    table = Table(title="comparison (mean ± std over a sweep config's seeds)")
    columns = ("line", "runs", "algorithm", "dataset", "clients", "rounds", "final test acc", "global model",
               "clients' models", "test acc at best val", "worst client", "wall s")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "line" else "right", overflow="fold")

    def acc(row: dict[str, Any], part: str) -> str:
        key = part if part in (FINAL_GLOBAL_TEST, FINAL_CLIENTS_TEST) else f"{part}_test_acc"
        value = row[key]
        mark = HEADLINE_MARK if key == HEADLINE_COLUMN[Headline(row["headline"])] else ""
        return "-" if value is None else f"{value:.4f} ± {row[f'{key}_std']:.4f}{mark}"

    for row in rows:
        worst = "-" if row["worst_client_acc"] is None else f"{row['worst_client_acc']:.4f}"
        wall = "-" if row["wall_seconds"] is None else f"{row['wall_seconds']:.1f}"
        cells = [row["line"], str(row["runs"]), str(row["algorithm"]), str(row["dataset"]), str(row["clients"])]
        figures = [acc(row, part) for part in ("final", FINAL_GLOBAL_TEST, FINAL_CLIENTS_TEST, "best")]
        table.add_row(*cells, str(row["rounds"]), *figures, worst, wall)
    output_console().print(table)
    output_console().print(HEADLINE_NOTE, highlight=False)


def _plot(lines: list[Line], path: Path) -> None:
    """The lines' headline test figure per round (each its algorithm's headline model), overlaid, in
    colour-blind-safe colours and distinct dashes; a sweep config's as its mean with a ± std band over seeds."""
    if path.suffix.lower() != ".png":
        raise ValueError(f"--plot {path}: give a .png file name")
    labels, shared = plot_labels(lines)
    figure = new_figure(9, 5)
    axis = figure.subplots()
    for index, (line, label) in enumerate(zip(lines, labels, strict=True)):
        first, second = (
            (GLOBAL_TEST_ACC, TEST_ACC) if line.headline() is Headline.GLOBAL else (TEST_ACC, GLOBAL_TEST_ACC)
        )
        curves = []
        for run in line.runs:
            rows = [r for r in RunDirectory(run).rows() if r.get("round", 0) >= 1]
            curves.append([r.get(first, r.get(second, np.nan)) for r in rows])
        length = min(len(c) for c in curves)
        values = np.array([c[:length] for c in curves], dtype=float)
        rounds = np.arange(1, length + 1)
        mean = np.nanmean(values, axis=0)
        colour, style = PALETTE[index % len(PALETTE)], DASHES[index % len(DASHES)]
        model = "global model" if first == GLOBAL_TEST_ACC else "clients' models"
        axis.plot(rounds, mean, color=colour, linestyle=style, label=f"{label}: {model}")
        if len(curves) > 1:
            spread = np.nanstd(values, axis=0)
            axis.fill_between(rounds, mean - spread, mean + spread, alpha=0.15, color=colour, linewidth=0)
    title = "test accuracy per round, each algorithm's headline model" + (f" ({shared})" if shared else "")
    if any(line.over_seeds for line in lines):
        title += "; a sweep config: mean ± std over its seeds"
    axis.set_title(textwrap.fill(title, 90), fontsize=10)
    axis.set(xlabel="round", ylabel="test accuracy (AUC for links)")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    atomic_write(path.absolute(), figure_bytes(figure, "png"))
