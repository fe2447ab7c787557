"""``stamen sweep``: run-config values x seeds, on either engine, resumable, summarised.

    stamen sweep --name lr-model --set lr=0.01,0.005 --set model='gcn','sage' --seeds 0,1,2 \\
                 -c "dataset='cora' data-root='/data' num-server-rounds=50" --engine inprocess --jobs 2
    stamen sweep --name lr-model --grid exp.toml    (exp.toml: dataset = "cora" and [grid] lr = [0.01, 0.005])

Every run is a ``stamen run`` with its own run directory under ``<out>/<name>/``; runs
whose directory says ``finished`` are skipped, so the same command resumes a sweep.
Every config is checked before the first run starts. The sweep ends with a table of
mean +- std over seeds per config, and writes ``sweep.json`` (with provenance),
``sweep.csv`` and ``sweep.png`` into the sweep folder.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from stamen.cli.commands.run import federation_args
from stamen.cli.helptext import HelpFormatter
from stamen.common.options import add_ray_address
from stamen.common.pictures import BLUE, DASHES, PALETTE, VERMILLION, figure_bytes, new_figure
from stamen.common.screen import output_console
from stamen.contract import strict_json
from stamen.contract.algorithms import Headline
from stamen.contract.equivalences import notes_once
from stamen.contract.figures import FINAL_CLIENTS_TEST, FINAL_GLOBAL_TEST, GLOBAL_TEST_ACC, TEST_ACC
from stamen.contract.provenance import Provenance
from stamen.contract.run_config import RunConfig
from stamen.contract.tracking_group import TrackingGroup, group_environment, group_of, tracking_group
from stamen.experiments.sweep import (
    FIGURES,
    HEADLINE_COLUMN,
    HEADLINE_MARK,
    HEADLINE_NOTE,
    Group,
    SweepRun,
    check_fixed_and_swept,
    check_own_keys,
    fixed_file_keys,
    grid,
    grid_file,
    groups,
    parse_seeds,
    parse_set,
    run_figures,
)
from stamen.experiments.unit_progress import UnitProgress
from stamen.server.rundir import RunDirectory, RunStatus, atomic_write, check_output_dir, check_run_name
from stamen.server.runlock import FolderLock
from stamen.server.tracking import prepare_group_store
from stamen.simulations import lifetime, runner
from stamen.simulations.errors import RunFailed
from stamen.simulations.federation_config import FederationConfig
from stamen.simulations.overrides import override_text, parse_overrides
from stamen.simulations.preflight import prepare_mapping
from stamen.simulations.runner import Engine, ray_address_for

DEFAULT_OUT = "sweeps"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run-config values x seeds, resumable, with mean +- std per config",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=V1,V2", help="values to sweep")
    parser.add_argument(
        "--grid", default="", metavar="FILE", help="values to sweep from a TOML file's [grid] table: lr = [0.1, 0.2]"
    )
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (default: 0)")
    parser.add_argument("--run-config", "-c", action="append", default=[], help="fixed run-config overrides")
    parser.add_argument("--federation-config", action="append", default=[], help="as for stamen run")
    parser.add_argument("--clients", type=int, default=None, help="number of clients (as for stamen run)")
    parser.add_argument("--engine", choices=("flower", "inprocess"), default="inprocess", help="default: inprocess")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time (default: 1)")
    add_ray_address(parser)
    parser.add_argument(
        "--name", default="", help="the sweep's folder name; give it again to resume (default: a new one)"
    )
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"where sweep folders go (default: {DEFAULT_OUT})")
    parser.set_defaults(func=main)


@dataclass(frozen=True)
class SweepSpec:
    """One sweep, as ``stamen sweep`` and :func:`stamen.sweep` give it.

    Attributes:
        grid: the swept keys and their values (``--set`` and ``--grid`` parsed).
        seeds: the seeds of every config.
        run_config: the fixed run-config keys (``-c`` parsed, or the Python API's dict).
        federation_config: Flower's federation keys (``--clients`` folded in), as given.
        sets: the ``--set`` texts as given (recorded in ``sweep.json``).
        ray_address: the Ray cluster the flower engine's runs join (``None``: ``$RAY_ADDRESS`` if set).
    """

    grid: list[tuple[str, list[Any]]]
    seeds: list[int]
    run_config: dict[str, Any] = field(default_factory=dict)
    federation_config: dict[str, Any] = field(default_factory=dict)
    engine: str = "inprocess"
    jobs: int = 1
    name: str = ""
    out: str = DEFAULT_OUT
    sets: list[str] = field(default_factory=list)
    ray_address: str | None = None


@dataclass(frozen=True)
class SweepResult:
    """A sweep that ran: its folder, its configs (with mean and std over seeds), the runs that failed."""

    folder: Path
    groups: list[Group]
    failed: list[str]

    def rows(self) -> list[dict[str, Any]]:
        """The sweep's table, a dict per config: its name, swept values, runs, and each figure's mean and std
        (the columns of ``sweep.csv``, with the swept values besides)."""
        rows = []
        for group in self.groups:
            stats = group.stats()
            figures = {f"{key}_{s}": stats[key][s] for key, _ in FIGURES for s in ("mean", "std")}
            rows.append(
                {"config": group.name, **group.values, "runs": len(group.runs), "headline": group.headline().value}
                | figures
            )
        return rows


def main(args: argparse.Namespace) -> int:
    sets = [*(grid_file(args.grid) if args.grid else []), *(parse_set(text) for text in args.sets)]
    spec = SweepSpec(
        grid=sets,
        seeds=parse_seeds(args.seeds),
        run_config={**(fixed_file_keys(args.grid) if args.grid else {}), **parse_overrides(args.run_config)},
        federation_config=parse_overrides(federation_args(args), "federation config", files=False),
        engine=args.engine,
        jobs=args.jobs,
        name=args.name,
        out=args.out,
        sets=args.sets,
        ray_address=args.ray_address,
    )
    result = run_sweep(spec)
    if result.failed:
        print(
            f"stamen sweep: {len(result.failed)} run(s) failed: {', '.join(result.failed)}; "
            f"logs in {result.folder / 'logs'}",
            file=sys.stderr,
        )
        return 1
    return 0


def run_sweep(spec: SweepSpec, show: bool = True, provenance: Provenance | None = None) -> SweepResult:
    """Check, run (or resume) and summarise the sweep ``spec``; ``show``: print the progress and the table.
    ``provenance``: who started the sweep, recorded in ``sweep.json`` and each run (``None``: this process's).

    Nothing is written before every check of the grid passed; the sweep folder's lock is held throughout.
    """

    origin = provenance or Provenance.of_process()
    check_own_keys(spec.run_config, "-c/--run-config")
    check_fixed_and_swept(spec.run_config, [key for key, _ in spec.grid], "-c/--run-config and the grid")
    runs = grid(spec.grid, spec.seeds)  # before the lock: nothing written
    if spec.engine not in ("flower", "inprocess"):
        raise ValueError(f"engine must be 'flower' or 'inprocess', got {spec.engine!r}")
    if spec.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {spec.jobs}")
    ray_address_for(spec.engine, spec.ray_address)  # --ray-address with the in-process engine is refused here
    name = spec.name or time.strftime("sweep-%Y%m%d-%H%M%S")
    check_run_name(name)
    folder = check_output_dir(spec.out) / name

    with FolderLock(folder, "sweep folder"):  # two sweeps of one name: the second is refused, naming the first
        return _sweep(spec, folder, runs, show, origin)


def _sweep(spec: SweepSpec, folder: Path, runs: list[SweepRun], show: bool, origin: Provenance) -> SweepResult:
    """The sweep in ``folder``, its lock held: every config checked, the unfinished runs run, the table."""
    todo: list[SweepRun] = []
    for run in runs:  # every config is checked before the first run starts
        run_dir = folder / run.name
        finished = (run_dir / "status.json").is_file() and RunDirectory(run_dir).status().get("status") == "finished"
        if finished:
            continue
        address = ray_address_for(spec.engine, spec.ray_address)
        prepare_mapping(_config_values(spec, run, folder), spec.federation_config, address, engine=spec.engine)
        todo.append(run)
    if show:
        print(
            f"stamen sweep: {len(runs)} runs in {folder} ({len(runs) - len(todo)} finished already), "
            f"engine {spec.engine}"
        )
    failed = _execute(todo, spec, folder, show, origin)
    figures = {}
    for run in runs:
        run_dir = RunDirectory(folder / run.name)
        if (run_dir.path / "status.json").is_file() and run_dir.status().get("status") == RunStatus.FINISHED.value:
            figures[run.name] = run_figures(run_dir.summary())
    found = groups(runs, figures)
    _write(folder, spec, runs, found, failed, origin)
    if show:
        _print(found, folder)
    return SweepResult(folder, found, failed)


def _config_values(spec: SweepSpec, run: SweepRun, folder: Path) -> dict[str, Any]:
    """The run-config keys of one run of the sweep: the fixed ones, then the run's folder, values and seed."""
    own = {"output-dir": str(folder), "run-name": run.name, "overwrite": True, **dict(run.values), "seed": run.seed}
    return {**spec.run_config, **own}


def _execute(
    todo: list[SweepRun], spec: SweepSpec, folder: Path, show: bool = True, origin: Provenance | None = None
) -> list[str]:
    """Run ``todo`` (``--jobs`` at a time); return the names of the runs that failed."""
    failed: list[str] = []
    if not todo:
        return failed
    if spec.engine == "inprocess" and spec.jobs == 1:  # one process: imports and data loaded once
        return _execute_here(todo, spec, folder, show, origin)
    handed = origin or Provenance.of_process()  # each run's process records the sweep's command
    logs = folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    if any("mlflow" in str(_config_values(spec, run, folder).get("tracking", "")) for run in todo):
        prepare_group_store(_group(todo[0], folder))  # the units' one store, made before they start together
    running: dict[str, subprocess.Popen] = {}
    queue = list(todo)
    with _screen(show, len(todo)) as screen:
        try:
            while queue or running:
                while queue and len(running) < spec.jobs:
                    run = queue.pop(0)
                    command = [
                        sys.executable,
                        "-m",
                        "stamen.cli.main",
                        "run",
                        "--quiet",
                        "--engine",
                        spec.engine,
                    ]
                    # a run of its own process: its config crosses on the command line (the process's boundary)
                    command += ["-c", override_text(_config_values(spec, run, folder))]
                    if spec.federation_config:
                        command += ["--federation-config", override_text(spec.federation_config)]
                    address = ray_address_for(spec.engine, spec.ray_address)
                    if address:
                        command += ["--ray-address", address]
                    with open(logs / f"{run.name}.log", "w") as log:
                        log.write("$ " + shlex.join(command) + "\n")
                        log.flush()
                        env = {**group_environment(_group(run, folder)), **handed.environment()}
                        running[run.name] = lifetime.start(command, stdout=log, stderr=subprocess.STDOUT, env=env)
                for name, process in list(running.items()):
                    if process.poll() is not None:
                        del running[name]
                        if process.returncode not in (0, 3):
                            failed.append(name)
                        screen.finished(_outcome(name, name in failed))
                time.sleep(0.2)
        except KeyboardInterrupt:
            for process in running.values():  # each run stops its own processes and marks itself interrupted
                process.terminate()
            for process in running.values():
                lifetime.stop(process)
            raise
    return failed


def _execute_here(
    todo: list[SweepRun], spec: SweepSpec, folder: Path, show: bool = True, origin: Provenance | None = None
) -> list[str]:
    """Run ``todo`` one after another in this process on the in-process engine."""
    failed = []
    federation = FederationConfig.from_mapping(spec.federation_config)
    with _screen(show, len(todo)) as screen:
        for one in todo:
            config = RunConfig.from_mapping(_config_values(spec, one, folder))
            try:
                with tracking_group(_group(one, folder)):  # one MLflow experiment for the sweep, a run per unit
                    runner.run(
                        config,
                        federation=federation,
                        engine=Engine.INPROCESS,
                        provenance=origin or Provenance.of_process(),
                    )
            except RunFailed:
                failed.append(one.name)
            screen.finished(_outcome(one.name, one.name in failed))
    return failed


def _group(run: SweepRun, folder: Path) -> TrackingGroup:
    """The tracking group of a sweep's run: the sweep's experiment and store, the run's values and seed as tags."""
    return group_of("sweep", folder.name, folder, dict(run.values), run.seed)


@contextlib.contextmanager
def _screen(show: bool, runs: int) -> Iterator[UnitProgress]:
    """The sweep's progress on stderr (``show=False``: none): a bar on a terminal, plain lines elsewhere."""
    with UnitProgress(output_console(stderr=True), "sweep", enabled=show) as screen:
        screen.begin(runs, 0)
        yield screen


def _outcome(name: str, failed: bool) -> str:
    return f"{name} {'failed' if failed else 'finished'}"


def _write(
    folder: Path, spec: SweepSpec, runs: list[SweepRun], found: list[Group], failed: list[str], origin: Provenance
) -> None:
    seeds = sorted({run.seed for run in runs})
    record = {
        "provenance": origin.record(seeds=seeds),
        "setting": {
            "sets": spec.sets,
            "grid": dict(spec.grid),
            "run_config": spec.run_config,
            "federation_config": spec.federation_config,
            "engine": spec.engine,
            "jobs": spec.jobs,
        },
        "groups": [
            {"config": g.name, "values": g.values, "headline": g.headline().value, "runs": g.runs, "stats": g.stats()}
            for g in found
        ],
        "failed": failed,
    }
    atomic_write(folder / "sweep.json", strict_json.dumps(record, indent=2) + "\n")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["config", "runs", "headline", *[f"{key}_{s}" for key, _ in FIGURES for s in ("mean", "std")]])
    for group in found:
        stats = group.stats()
        figures = [stats[key][s] for key, _ in FIGURES for s in ("mean", "std")]
        writer.writerow([group.name, len(group.runs), group.headline().value, *figures])
    atomic_write(folder / "sweep.csv", buffer.getvalue())
    _plot(folder, found)


# the sweep picture's two points per config: (figure, legend, colour-blind safe colour, marker)
MODEL_POINTS = (
    (FINAL_GLOBAL_TEST, "global model", BLUE, "o"),
    (FINAL_CLIENTS_TEST, "clients' models", VERMILLION, "s"),
)


def bar_text(value: float | None) -> str:
    """A point's label: its value (``0.000`` too), or that it has none."""
    return "no figure" if value is None else f"{value:.3f}"


def _plot(folder: Path, found: list[Group]) -> None:
    """``sweep.png``: the headline test figure per round (mean ± std band over seeds) and, per config, the final
    global and clients' figures as points with error bars over seeds.

    Points, not bars: a sweep's configs tend to lie a few points of accuracy apart, which bars from 0 flatten
    into equal heights; points on an axis that spans the values (labelled as not starting at 0), each with its
    value printed, show the gaps and the spread over seeds. The algorithm's headline model's point is filled,
    the other hollow."""

    figure = new_figure(13, 5.2)
    curves, points = figure.subplots(1, 2, width_ratios=(1, max(1.0, len(found) / 4)))
    for index, group in enumerate(found):
        headline_key = GLOBAL_TEST_ACC if group.headline() is Headline.GLOBAL else TEST_ACC
        other_key = TEST_ACC if headline_key == GLOBAL_TEST_ACC else GLOBAL_TEST_ACC
        series = []
        for run in group.runs:
            rows = RunDirectory(folder / run["run"]).rows()
            series.append([r.get(headline_key, r.get(other_key)) for r in rows if r.get("round", 0) >= 1])
        length = min((len(s) for s in series), default=0)
        if length:
            values = np.array([[np.nan if v is None else v for v in s[:length]] for s in series], dtype=float)
            mean, std = np.nanmean(values, axis=0), np.nanstd(values, axis=0)
            rounds = np.arange(1, length + 1)
            colour = PALETTE[index % len(PALETTE)]
            style = DASHES[index % len(DASHES)]  # the lines read apart in grey too
            model = "global" if headline_key == GLOBAL_TEST_ACC else "clients'"
            curves.plot(rounds, mean, color=colour, linestyle=style, label=f"{group.name} ({model})")
            curves.fill_between(rounds, mean - std, mean + std, alpha=0.15, color=colour, linewidth=0)
    curves.set(xlabel="round", ylabel="test accuracy (AUC for links)", title="headline model's test figure per round")
    curves.xaxis.get_major_locator().set_params(integer=True)
    curves.grid(alpha=0.3)
    if found:
        curves.legend(fontsize=7, title="config (headline model); band: ± std over seeds", title_fontsize=7)
    positions = list(range(len(found)))
    for offset, (key, _, colour, marker) in enumerate(MODEL_POINTS):
        stats = [group.stats()[key] for group in found]
        for position, group, stat in zip(positions, found, stats, strict=True):
            if stat["mean"] is None:
                continue
            x = position + (offset - 0.5) * 0.3
            filled = HEADLINE_COLUMN[group.headline()] == key
            points.errorbar(x, stat["mean"], yerr=stat["std"] or 0.0, fmt=marker, color=colour, capsize=4,
                            markerfacecolor=colour if filled else "white", markersize=7)  # fmt: skip
            points.annotate(bar_text(stat["mean"]), (x, stat["mean"]), textcoords="offset points", xytext=(7, 0),
                            ha="left", va="center", fontsize=7)  # fmt: skip
    for _, label, colour, marker in MODEL_POINTS:
        points.plot([], [], marker, color=colour, label=label)
    points.plot([], [], "o", color="grey", label="filled: the algorithm's headline model")
    points.plot([], [], "o", color="grey", markerfacecolor="white", label="hollow: the other model")
    points.set_xticks(positions, [group.name for group in found], rotation=30, ha="right", fontsize=7)
    points.set_xlim(-0.6, len(found) - 0.4)
    points.margins(y=0.15)
    points.set(
        ylabel="final test accuracy (AUC for links); axis not from 0",
        title="final round per config: mean ± std over seeds",
    )
    points.grid(axis="y", alpha=0.3)
    if found:
        points.legend(fontsize=7)
    figure.suptitle(f"sweep {folder.name}")
    atomic_write(folder / "sweep.png", figure_bytes(figure, "png"))


def _print(found: list[Group], folder: Path) -> None:

    table = Table(title=f"sweep {folder.name}: mean ± std over seeds")
    table.add_column("config", overflow="fold")
    table.add_column("runs", justify="right")
    for _, label in FIGURES:
        table.add_column(label, justify="right")
    for group in found:
        stats = group.stats()
        cells = []
        for key, _ in FIGURES:
            mean, std = stats[key]["mean"], stats[key]["std"]
            cell = "-" if mean is None else f"{mean:.4f} ± {std:.4f}" if key != "total_wall_seconds" else f"{mean:.1f}"
            cells.append(cell + (HEADLINE_MARK if key == HEADLINE_COLUMN[group.headline()] else ""))
        table.add_row(group.name, str(len(group.runs)), *cells)
    console = output_console()
    console.print(table)
    console.print(HEADLINE_NOTE, highlight=False)
    for note in notes_once((g.name, [n for run in g.runs for n in run.get("notes", [])]) for g in found):
        console.print(f"note: {note}", highlight=False)
    console.print(f"outputs: {folder / 'sweep.json'}, {folder / 'sweep.csv'}, {folder / 'sweep.png'}")
