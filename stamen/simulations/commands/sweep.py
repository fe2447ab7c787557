"""``stamen sweep``: run-config values x seeds, on either engine, resumable, summarised.

    stamen sweep --name lr-model --set lr=0.01,0.005 --set model='gcn','sage' --seeds 0,1,2 \\
                 -c "dataset='cora' data-root='/data' num-server-rounds=50" --engine inprocess --jobs 2
    stamen sweep --name lr-model --grid grid.toml -c exp.toml    (grid.toml: [grid] lr = [0.01, 0.005])

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
import json
import math
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stamen.contract import strict_json
from stamen.contract.equivalences import notes_once
from stamen.contract.figures import FINAL_CLIENTS_TEST, FINAL_GLOBAL_TEST, GLOBAL_TEST_ACC, TEST_ACC
from stamen.simulations.commands.run import add_ray_address, federation_args, ray_address_for
from stamen.simulations.helptext import HelpFormatter
from stamen.simulations.sweep import (
    FIGURES,
    Group,
    SweepRun,
    check_own_keys,
    grid,
    grid_file,
    groups,
    parse_seeds,
    parse_set,
    run_figures,
)
from stamen.simulations.unit_progress import UnitProgress

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
        run_config: fixed ``-c`` overrides (``key=value`` strings and experiment files).
        federation_config: Flower's federation overrides (``--clients`` folded in).
        sets: the ``--set`` texts as given (recorded in ``sweep.json``).
        ray_address: the Ray cluster the flower engine's runs join (``None``: ``$RAY_ADDRESS`` if set).
    """

    grid: list[tuple[str, list[Any]]]
    seeds: list[int]
    run_config: list[str] = field(default_factory=list)
    federation_config: list[str] = field(default_factory=list)
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
            rows.append({"config": group.name, **group.values, "runs": len(group.runs), **figures})
        return rows


def main(args: argparse.Namespace) -> int:
    sets = [*(grid_file(args.grid) if args.grid else []), *(parse_set(text) for text in args.sets)]
    spec = SweepSpec(
        grid=sets,
        seeds=parse_seeds(args.seeds),
        run_config=args.run_config,
        federation_config=federation_args(args),
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


def run_sweep(spec: SweepSpec, show: bool = True) -> SweepResult:
    """Check, run (or resume) and summarise the sweep ``spec``; ``show``: print the progress and the table.

    Nothing is written before every check of the grid passed; the sweep folder's lock is held throughout.
    """
    from stamen.server.rundir import check_output_dir, check_run_name
    from stamen.simulations.overrides import parse_overrides

    fixed = parse_overrides(spec.run_config)
    check_own_keys(fixed, "-c/--run-config")
    for key, _ in spec.grid:
        if key in fixed:  # which value would a run take? neither is chosen silently
            raise ValueError(f"{key} is both swept (--set or the grid) and fixed by -c; drop one of them")
    runs = grid(spec.grid, spec.seeds)  # before the lock: nothing written
    if spec.engine not in ("flower", "inprocess"):
        raise ValueError(f"engine must be 'flower' or 'inprocess', got {spec.engine!r}")
    if spec.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {spec.jobs}")
    ray_address_for(spec.engine, spec.ray_address)  # --ray-address with the in-process engine is refused here
    name = spec.name or time.strftime("sweep-%Y%m%d-%H%M%S")
    check_run_name(name)
    folder = check_output_dir(spec.out) / name
    from stamen.server.runlock import FolderLock

    with FolderLock(folder, "sweep folder"):  # two sweeps of one name: the second is refused, naming the first
        return _sweep(spec, folder, runs, show)


def _sweep(spec: SweepSpec, folder: Path, runs: list[SweepRun], show: bool) -> SweepResult:
    """The sweep in ``folder``, its lock held: every config checked, the unfinished runs run, the table."""
    from stamen.server.rundir import RunDirectory, RunStatus
    from stamen.simulations.preflight import prepare

    todo: list[SweepRun] = []
    for run in runs:  # every config is checked before the first run starts
        run_dir = folder / run.name
        finished = (run_dir / "status.json").is_file() and RunDirectory(run_dir).status().get("status") == "finished"
        if finished:
            continue
        prepare(_config_args(spec, run, folder), spec.federation_config, ray_address_for(spec.engine, spec.ray_address))
        todo.append(run)
    if show:
        print(
            f"stamen sweep: {len(runs)} runs in {folder} ({len(runs) - len(todo)} finished already), "
            f"engine {spec.engine}"
        )
    failed = _execute(todo, spec, folder, show)
    figures = {}
    for run in runs:
        run_dir = RunDirectory(folder / run.name)
        if (run_dir.path / "status.json").is_file() and run_dir.status().get("status") == RunStatus.FINISHED.value:
            figures[run.name] = run_figures(run_dir.summary())
    found = groups(runs, figures)
    _write(folder, spec, runs, found, failed)
    if show:
        _print(found, folder)
    return SweepResult(folder, found, failed)


def _config_args(spec: SweepSpec, run: SweepRun, folder: Path) -> list[str]:
    own = f"output-dir={json.dumps(str(folder))} run-name={json.dumps(run.name)} overwrite=true {run.overrides()}"
    return [*spec.run_config, own]


def _execute(todo: list[SweepRun], spec: SweepSpec, folder: Path, show: bool = True) -> list[str]:
    """Run ``todo`` (``--jobs`` at a time); return the names of the runs that failed."""
    from stamen.simulations import lifetime

    failed: list[str] = []
    if not todo:
        return failed
    if spec.engine == "inprocess" and spec.jobs == 1:  # one process: imports and data loaded once
        return _execute_here(todo, spec, folder, show)
    logs = folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
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
                        "stamen.simulations.cli",
                        "run",
                        "--quiet",
                        "--engine",
                        spec.engine,
                    ]
                    for text in _config_args(spec, run, folder):
                        command += ["-c", text]
                    for text in spec.federation_config:
                        command += ["--federation-config", text]
                    address = ray_address_for(spec.engine, spec.ray_address)
                    if address:
                        command += ["--ray-address", address]
                    with open(logs / f"{run.name}.log", "w") as log:
                        log.write("$ " + shlex.join(command) + "\n")
                        log.flush()
                        running[run.name] = lifetime.start(command, stdout=log, stderr=subprocess.STDOUT)
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


def _execute_here(todo: list[SweepRun], spec: SweepSpec, folder: Path, show: bool = True) -> list[str]:
    """Run ``todo`` one after another in this process on the in-process engine."""
    from stamen.simulations.commands.run import simulate
    from stamen.simulations.errors import RunFailed
    from stamen.simulations.preflight import prepare

    failed = []
    with _screen(show, len(todo)) as screen:
        for run in todo:
            try:
                simulate(
                    prepare(_config_args(spec, run, folder), spec.federation_config), mode="quiet", engine="inprocess"
                )
            except RunFailed:
                failed.append(run.name)
            screen.finished(_outcome(run.name, run.name in failed))
    return failed


@contextlib.contextmanager
def _screen(show: bool, runs: int) -> Iterator[UnitProgress]:
    """The sweep's progress on stderr (``show=False``: none): a bar on a terminal, plain lines elsewhere."""
    from stamen.simulations.screen import output_console

    with UnitProgress(output_console(stderr=True), "sweep", enabled=show) as screen:
        screen.begin(runs, 0)
        yield screen


def _outcome(name: str, failed: bool) -> str:
    return f"{name} {'failed' if failed else 'finished'}"


def _write(folder: Path, spec: SweepSpec, runs: list[SweepRun], found: list[Group], failed: list[str]) -> None:
    from stamen.contract.provenance import provenance
    from stamen.server.rundir import atomic_write

    seeds = sorted({run.seed for run in runs})
    record = {
        "provenance": provenance(seeds=seeds),
        "setting": {
            "sets": spec.sets,
            "grid": dict(spec.grid),
            "run_config": spec.run_config,
            "federation_config": spec.federation_config,
            "engine": spec.engine,
            "jobs": spec.jobs,
        },
        "groups": [{"config": g.name, "values": g.values, "runs": g.runs, "stats": g.stats()} for g in found],
        "failed": failed,
    }
    atomic_write(folder / "sweep.json", strict_json.dumps(record, indent=2) + "\n")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["config", "runs", *[f"{key}_{s}" for key, _ in FIGURES for s in ("mean", "std")]])
    for group in found:
        stats = group.stats()
        writer.writerow([group.name, len(group.runs), *[stats[key][s] for key, _ in FIGURES for s in ("mean", "std")]])
    atomic_write(folder / "sweep.csv", buffer.getvalue())
    _plot(folder, found)


# the sweep picture's two points per config: (figure, legend, colour-blind safe colour, marker)
MODEL_POINTS = (
    (FINAL_GLOBAL_TEST, "global model", "#0072B2", "o"),
    (FINAL_CLIENTS_TEST, "clients' models", "#D55E00", "s"),
)


def bar_text(value: float | None) -> str:
    """A bar's label: its value (``0.000`` too: a bar of height zero is otherwise invisible), or that it has none."""
    return "no figure" if value is None else f"{value:.3f}"


def _plot(folder: Path, found: list[Group]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from stamen.server.rundir import RunDirectory, atomic_write

    figure, (curves, bars) = plt.subplots(1, 2, figsize=(12, 4.5))
    for group in found:
        series = []
        for run in group.runs:
            rows = RunDirectory(folder / run["run"]).rows()
            series.append([r.get(GLOBAL_TEST_ACC, r.get(TEST_ACC)) for r in rows if r.get("round", 0) >= 1])
        length = min((len(s) for s in series), default=0)
        if length:
            import numpy as np

            values = np.array([[v if v is not None else np.nan for v in s[:length]] for s in series], dtype=float)
            mean, std = np.nanmean(values, axis=0), np.nanstd(values, axis=0)
            rounds = np.arange(1, length + 1)
            (line,) = curves.plot(rounds, mean, label=group.name)
            curves.fill_between(rounds, mean - std, mean + std, alpha=0.2, color=line.get_color())
    curves.set(xlabel="round", ylabel="test accuracy", title="test accuracy per round (mean ± std over seeds)")
    curves.xaxis.get_major_locator().set_params(integer=True)
    if found:
        curves.legend(fontsize=7)
    positions = list(range(len(found)))
    # the global model and the clients' own models side by side (what a personalised method is for), as points with
    # their spread over the seeds, each labelled with its value, on an axis around them (a bar from 0 hides a gap)
    for offset, (key, label, colour, marker) in enumerate(MODEL_POINTS):
        stats = [group.stats()[key] for group in found]
        xs = [p + (offset - 0.5) * 0.3 for p in positions]
        means = [float("nan") if s["mean"] is None else s["mean"] for s in stats]
        errors = [s["std"] or 0.0 for s in stats]
        bars.errorbar(xs, means, yerr=errors, fmt=marker, color=colour, capsize=4, label=label, linestyle="none")
        for x, mean in zip(xs, means, strict=True):
            bars.annotate(bar_text(None if math.isnan(mean) else mean), (x, 0 if math.isnan(mean) else mean),
                          textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)  # fmt: skip
    bars.set_xticks(positions, [group.name for group in found], rotation=30, ha="right", fontsize=7)
    bars.set(
        ylabel="final test figure (accuracy; AUC for links)", title="per config, final round (mean ± std over seeds)"
    )
    if found:
        bars.legend(fontsize=7)
    figure.suptitle(f"sweep {folder.name}")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    plt.close(figure)
    atomic_write(folder / "sweep.png", buffer.getvalue())


def _print(found: list[Group], folder: Path) -> None:
    from rich.table import Table

    from stamen.simulations.screen import output_console

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
            cells.append(
                "-" if mean is None else f"{mean:.4f} ± {std:.4f}" if key != "total_wall_seconds" else f"{mean:.1f}"
            )
        table.add_row(group.name, str(len(group.runs)), *cells)
    console = output_console()
    console.print(table)
    for note in notes_once((g.name, [n for run in g.runs for n in run.get("notes", [])]) for g in found):
        console.print(f"note: {note}", highlight=False)
    console.print(f"outputs: {folder / 'sweep.json'}, {folder / 'sweep.csv'}, {folder / 'sweep.png'}")
