"""``stamen bench sim``: the same job on three engines, side by side in one command.

Per algorithm and client count: ``stamen run`` on the Flower engine (a real ``flwr
run``), ``stamen run --engine inprocess`` (the same ServerApp and ClientApp in one
process, a round's clients trained together), the same with ``--in-turn`` (the clients
answered one after another), and, for FedAvg, a plain PyTorch FedAvg loop over the same federation
(:mod:`stamen.benches.baseline`, the yardstick of in-process libraries), and, beside
the Flower engine, the Flower floor: a minimal Flower app that only moves the model's weights
for the same rounds and clients, run the same way (:mod:`stamen.benches.floor`; its
column: its wall time and the Flower engine's over it; with ``--library-floor`` also the floor whose
clients import PyTorch and PyG first, the least any PyG app costs on Flower). Each runs
as its own command in a fresh process, timed from the command's start: its wall time,
the time until round 1 was done, and its peak memory are its own. ``--repeats N`` runs the
in-process engine and the plain loop N times, interleaved, and reports the median run's
figures with each repeat's ratio; ``--flower-repeats N`` runs the Flower engine and its floors N times
(each floor right after its Flower run) and reports the repeat whose ratio to the floor is the median,
with every repeat's ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

from stamen.benches.floor import LIBRARIES, floor_run, model_shapes
from stamen.benches.records import int_list
from stamen.benches.sim_tables import markdown, print_table, sim_rows  # noqa: F401  (the bench's tables)
from stamen.common.options import add_ray_address
from stamen.contract import strict_json
from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.figures import FINAL_TEST_ACC, TEST_ACC_AT_BEST_VAL, headline
from stamen.experiments.long_job import LongJob
from stamen.simulations import lifetime
from stamen.simulations.preflight import prepare
from stamen.simulations.progress import read_rows
from stamen.simulations.runner import ray_address_for

NAME = "sim"
HELP = "flwr run simulations against an in-process FedAvg loop"

STEADY_KEYS = (
    "seconds",
    "exchange_seconds",
    "aggregate_seconds",
    "client_train_seconds_max",
    "client_handler_seconds_max",
    "client_handler_seconds_sum",
    "client_setup_seconds_sum",
    "client_train_seconds_sum",
    "client_eval_seconds_sum",
    "client_pack_seconds_sum",
)


def add_arguments(sim: argparse.ArgumentParser) -> None:
    sim.add_argument("--dataset", default="cora")
    sim.add_argument("--data-root", default="")
    sim.add_argument("--clients", default="10", help="comma-separated client counts, e.g. 10,50,100")
    sim.add_argument("--partitioner", default="louvain")
    sim.add_argument("--algorithms", default="fedavg", help="comma-separated, e.g. fedavg,fedprox,local")
    sim.add_argument("--rounds", type=int, default=100)
    sim.add_argument("--model", default="gcn")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--csbm-nodes", type=int, default=3000)
    sim.add_argument("--cpus-per-client", type=int, default=1)
    sim.add_argument("--no-baseline", action="store_true", help="skip the in-process loop")
    sim.add_argument(
        "--no-floor", action="store_true", help="skip the Flower floor (a minimal Flower app, no training)"
    )
    sim.add_argument(
        "--library-floor",
        action="store_true",
        help="also run the floor whose clients import PyTorch and PyG at their first message, as every PyG app's "
        "clients must: Stamen's Flower run over it is what Stamen's own code adds",
    )
    sim.add_argument(
        "--flower-repeats",
        type=int,
        default=1,
        help="run the Flower engine and its floors this many times, each floor right after its Flower run; the "
        "figures are the repeat whose ratio to the floor is the median, every repeat's ratio is shown beside",
    )
    add_ray_address(sim)
    sim.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="run the in-process engine (together and in turn) and the plain loop this many times, interleaved; "
        "each figure is the median run's, each repeat's ratio is shown beside (this machine's timings vary by "
        "10-20%% from run to run)",
    )
    sim.add_argument(
        "--local-eval",
        choices=("false", "true"),
        default="false",
        help="the engines' clients also evaluate their trained models (the client figures); false, the default, "
        "evaluates as the plain loop does, the global model on every client each round, and times the in-process "
        "engine with the client figures beside",
    )


def per_round_breakdown(rows: list[dict[str, Any]], actors: int) -> dict[str, float]:
    """Mean seconds per round after the first (which carries start-up), by part.

    ``engine_seconds`` is what the exchange took beyond the clients' own handlers
    spread over the ``actors`` that ran them in parallel: Flower's message passing,
    polling, scheduling on Ray actors and the transfer of each client's context.
    """
    steady = [row for row in rows if row.get("round", 0) >= 2 and "seconds" in row]
    if not steady:
        steady = [row for row in rows if "seconds" in row]
    if not steady:
        raise RuntimeError("the run recorded no round, so there is nothing to time; its run.log says why it stopped")
    figures = {key: mean(row[key] for row in steady) for key in STEADY_KEYS}
    figures["engine_seconds"] = figures["exchange_seconds"] - figures["client_handler_seconds_sum"] / actors
    first = next((row for row in rows if row.get("round") == 1), None)
    figures["first_round_seconds"] = first["seconds"] if first else float("nan")
    return figures


def _baseline(overrides: dict[str, Any], num_clients: int) -> dict[str, Any]:
    """The in-process loop in a fresh process, so its time and peak memory are its own."""
    code = (
        "import json, sys, torch; torch.set_num_threads(1);"
        "from stamen.contract.run_config import RunConfig;"
        "from stamen.benches.baseline import in_process_fedavg;"
        f"print(json.dumps(in_process_fedavg(RunConfig.from_flower(json.loads(sys.argv[1])), {num_clients})))"
    )
    result = lifetime.run(
        [sys.executable, "-c", code, json.dumps(overrides)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"the in-process baseline failed: {result.stderr.strip().splitlines()[-1]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _command(
    run_overrides: list[str],
    num_clients: int,
    engine: str,
    run_dir: Path,
    options: tuple[str, ...] = (),
    ray_address: str = "",
) -> dict[str, float]:
    """``stamen run`` as a user types it, timed: until round 1's row is written, and to the end."""
    command = [
        sys.executable,
        "-m",
        "stamen.cli.main",
        "run",
        "--quiet",
        "--engine",
        engine,
        "--clients",
        str(num_clients),
        *options,
    ]
    if engine == "flower" and ray_address:
        command += ["--ray-address", ray_address]
    for text in run_overrides:
        command += ["-c", text]
    started = time.perf_counter()
    process = lifetime.start(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    round_one = None
    try:
        while process.poll() is None:
            rows = read_rows(run_dir / "metrics.jsonl")
            if round_one is None and any(r.get("round") == 1 and "seconds" in r for r in rows):
                round_one = time.perf_counter() - started
            time.sleep(0.05)
    except KeyboardInterrupt:
        lifetime.stop(process)
        raise
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"stamen run --engine {engine} failed: {process.stderr.read().strip()[-500:]}")
    return {"command_wall_seconds": wall, "command_to_round_1_seconds": round_one if round_one is not None else wall}


def _median(runs: list, wall: Callable[[Any], float]) -> Any:
    """The run whose ``wall`` time is the median of ``runs`` (the lower middle one for an even count)."""
    return sorted(runs, key=wall)[(len(runs) - 1) // 2]


class _Runs:
    """``stamen run`` commands of one job, each timed (:func:`_command`), with the summary it wrote."""

    def __init__(
        self, folder: Path, stem: str, run_overrides: list[str], num_clients: int, ray_address: str = ""
    ) -> None:
        self.folder, self.stem, self.run_overrides, self.num_clients = folder, stem, run_overrides, num_clients
        self.ray_address = ray_address  # the Ray cluster of the flower engine's runs ("": their own Ray)

    def __call__(
        self, engine: str, suffix: str, *extra: str, options: tuple[str, ...] = ()
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        run_dir = self.folder / f"{self.stem}-{suffix}"
        overrides = [*self.run_overrides, *extra, f"run-name='{self.stem}-{suffix}'"]
        timings = _command(overrides, self.num_clients, engine, run_dir, options, self.ray_address)
        return timings, json.loads((run_dir / "summary.json").read_text())


def _flower_unit(
    timed: _Runs,
    federation_overrides: list[str],
    actors: int,
    floor: bool = True,
    library_floor: bool = False,
    suffix: str = "flower",
) -> dict[str, Any]:
    """One unit: the CLI's checks timed, then ``flwr run``; its summary and per-round breakdown; then, with
    ``floor``, the Flower floor for the same rounds, clients and Ray settings (none for an algorithm without a
    global model: no weights to move), and with ``library_floor`` the floor whose clients import
    :data:`~stamen.benches.floor.LIBRARIES` first. ``suffix``: the folder name after the job's stem."""
    checking = time.perf_counter()
    check = [*timed.run_overrides, f"run-name='{timed.stem}-check'"]
    prepared = prepare(check, federation_overrides, timed.ray_address)  # the CLI's checks
    check_seconds = time.perf_counter() - checking
    flower, summary = timed("flower", suffix)
    rows = [json.loads(line) for line in (Path(summary["run_dir"]) / "metrics.jsonl").read_text().splitlines()]
    shapes = model_shapes(Path(summary["run_dir"])) if floor else ""
    if shapes:
        print(f"[bench sim] {timed.stem}: the Flower floor ...", flush=True)
        rounds = prepared.config.num_server_rounds
        floor_figures = floor_run(shapes, rounds, prepared.federation, timed.ray_address)
        floor_figures["shapes"] = shapes
        if library_floor:
            print(f"[bench sim] {timed.stem}: the Flower floor importing {LIBRARIES} ...", flush=True)
            library_figures = floor_run(shapes, rounds, prepared.federation, timed.ray_address, imports=LIBRARIES)
            library_figures.update(shapes=shapes, imports=LIBRARIES)
    return {
        **({"floor": floor_figures} if shapes else {}),
        **({"library_floor": library_figures} if shapes and library_floor else {}),
        "timings": flower,
        "summary": summary,
        "check_seconds": check_seconds,
        "per_round": per_round_breakdown(rows, actors),
        "rounds_seconds": sum(r.get("seconds", 0) for r in rows),
    }


def _repeat_unit(timed: _Runs, suffix: str, plain: dict[str, Any] | None, num_clients: int) -> dict[str, Any]:
    """One unit: a repeat of the in-process engine, together and in turn, and of the plain loop (``plain``: its
    run config, ``None`` for none)."""
    label = f"{timed.stem}{suffix}"
    print(f"[bench sim] {label}: stamen run --engine inprocess ...", flush=True)
    engine = timed("inprocess", f"inprocess{suffix}")
    print(f"[bench sim] {label}: the same with --in-turn ...", flush=True)
    in_turn = timed("inprocess", f"inprocess-in-turn{suffix}", options=("--in-turn",))
    if plain is not None:
        print(f"[bench sim] {label}: in-process FedAvg loop ...", flush=True)
    return {"engine": engine, "in_turn": in_turn, "plain": _baseline(plain, num_clients) if plain else None}


def _local_eval_unit(timed: _Runs) -> list[dict[str, Any]]:
    """One unit: the in-process engine with the clients' figures (``local-eval=true``)."""
    with_client_figures, local_summary = timed("inprocess", "inprocess-local-eval", "local-eval=true")
    return [with_client_figures, local_summary]


def _flower_key(job: str, repeat: int) -> str:
    """The unit of the job's ``repeat``-th Flower run (the first keeps the name it had before repeats)."""
    return f"{job}/flower" if repeat == 1 else f"{job}/flower-{repeat}"


def _ratio_to_floor(unit: dict[str, Any]) -> float:
    """A Flower unit's run over its floor's (its wall time where it has no floor)."""
    figures = _repeat_figures(unit)
    return figures.get("floor_ratio", figures["total_wall_seconds"])


def _repeat_figures(unit: dict[str, Any]) -> dict[str, float]:
    """A Flower unit's wall times, its floors' and its ratios to them, for the record's ``flower_repeats``."""
    wall = unit["summary"]["total_wall_seconds"]
    figures = {"total_wall_seconds": wall}
    for name in ("floor", "library_floor"):
        if name in unit:
            figures[f"{name}_wall_seconds"] = unit[name]["wall_seconds"]
            figures[f"{name}_ratio"] = wall / unit[name]["wall_seconds"]
    return figures


def _keys(args: argparse.Namespace) -> list[str]:
    """The units: per job (client count x algorithm) its ``flwr run``, each repeat, and the local-eval run."""
    keys = []
    for num_clients in int_list(args.clients, "--clients"):
        for algorithm in [a.strip() for a in args.algorithms.split(",") if a.strip()]:
            job = f"{algorithm}/{num_clients}"
            keys += [_flower_key(job, r) for r in range(1, args.flower_repeats + 1)]
            keys += [f"{job}/repeat-{r}" for r in range(1, args.repeats + 1)]
            if not (args.local_eval == "true" or not ALGORITHMS[algorithm].aggregates):
                keys.append(f"{job}/local-eval")
    return keys


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """One ``flwr run`` per client count and algorithm; the in-process loop beside FedAvg.

    A unit is a job's ``flwr run`` (with the CLI's checks timed), one repeat of the in-process
    engine (together, in turn, and the plain loop for FedAvg), or its run with the client figures.
    """
    if args.repeats < 1:
        raise ValueError(f"--repeats {args.repeats}: give at least 1")
    if args.flower_repeats < 1:
        raise ValueError(f"--flower-repeats {args.flower_repeats}: give at least 1")
    if args.library_floor and args.no_floor:
        raise ValueError("--library-floor runs beside the Flower floor: drop --no-floor")
    ray_address = ray_address_for("flower", args.ray_address)
    out = Path(args.out).resolve()
    units.begin(_keys(args))
    results: list[dict[str, Any]] = []
    for num_clients in int_list(args.clients, "--clients"):
        for algorithm in [a.strip() for a in args.algorithms.split(",") if a.strip()]:
            overrides = {
                "algorithm": algorithm,
                "dataset": args.dataset,
                "data-root": str(Path(args.data_root).resolve()) if args.data_root else "",
                "partitioner": args.partitioner,
                "num-server-rounds": args.rounds,
                "model": args.model,
                "seed": args.seed,
                "csbm-nodes": args.csbm_nodes,
                "local-eval": args.local_eval == "true" or not ALGORITHMS[algorithm].aggregates,
                "output-dir": str(out / "runs"),
            }
            stem = f"{algorithm}-{num_clients}-{time.strftime('%Y%m%d-%H%M%S')}"
            run_overrides = [" ".join(f"{k}={json.dumps(v)}" for k, v in overrides.items())]
            federation_overrides = [f"num-supernodes={num_clients} client-resources-num-cpus={args.cpus_per_client}"]

            job = f"{algorithm}/{num_clients}"
            timed = _Runs(out / "runs", stem, run_overrides, num_clients, ray_address)
            actors = max(1, min(num_clients, (os.cpu_count() or 1) // args.cpus_per_client))
            flower_units = []
            for repeat in range(1, args.flower_repeats + 1):
                key, suffix = _flower_key(job, repeat), "flower" if repeat == 1 else f"flower-{repeat}"
                if key not in units:
                    label = f"{algorithm}, {num_clients} clients, {args.rounds} rounds"
                    print(f"[bench sim] {label}: flwr run{f' (repeat {repeat})' if repeat > 1 else ''} ...", flush=True)
                flower_units.append(
                    units.run(
                        key,
                        *(_flower_unit, timed, federation_overrides, actors, not args.no_floor, args.library_floor),
                        suffix,
                        line=lambda unit, key=key: f"{key}: flwr run {unit['summary']['total_wall_seconds']:.1f} s",
                    )
                )
            flower_unit = _median(flower_units, _ratio_to_floor)  # one machine state: the run and its floor
            flower, summary = flower_unit["timings"], flower_unit["summary"]
            baseline = algorithm == "fedavg" and not args.no_baseline
            plain_config = {k: v for k, v in overrides.items() if k != "output-dir"} if baseline else None
            repeats = []
            for repeat in range(1, args.repeats + 1):  # interleaved: the machine's drift touches each alike
                suffix = f"-{repeat}" if args.repeats > 1 else ""
                repeats.append(
                    units.run(
                        f"{job}/repeat-{repeat}",
                        *(_repeat_unit, timed, suffix, plain_config, num_clients),
                        line=lambda unit, name=f"{job}, repeat {repeat}": (
                            f"{name}: in-process engine {unit['engine'][1]['total_wall_seconds']:.1f} s"
                        ),
                    )
                )
            engines, in_turns = [r["engine"] for r in repeats], [r["in_turn"] for r in repeats]
            plains = [r["plain"] for r in repeats if r["plain"] is not None]
            inprocess, engine_summary = _median(engines, lambda run: run[1]["total_wall_seconds"])
            in_turn, in_turn_summary = _median(in_turns, lambda run: run[1]["total_wall_seconds"])
            in_turn = {**in_turn, "total_wall_seconds": in_turn_summary["total_wall_seconds"]}
            in_turn[TEST_ACC_AT_BEST_VAL] = headline(in_turn_summary["best"])
            with_client_figures = None
            if not overrides["local-eval"]:
                with_client_figures, local_summary = units.run(
                    f"{job}/local-eval",
                    _local_eval_unit,
                    timed,
                    line=lambda unit, job=job: f"{job}: with client figures {unit[1]['total_wall_seconds']:.1f} s",
                )
                with_client_figures = {**with_client_figures, "total_wall_seconds": local_summary["total_wall_seconds"]}
            breakdown = flower_unit["per_round"]
            entry: dict[str, Any] = {
                "algorithm": algorithm,
                "clients": num_clients,
                "flwr_run": {
                    "total_wall_seconds": summary["total_wall_seconds"],
                    "peak_memory_gb": summary["peak_memory_gb"],
                    FINAL_TEST_ACC: headline(summary["final"]),
                    TEST_ACC_AT_BEST_VAL: headline(summary["best"]),
                    "max_test_acc": summary["max_test_acc"],
                    "start_up_seconds": summary["total_wall_seconds"] - flower_unit["rounds_seconds"],
                    "outside_server_app_seconds": summary["total_wall_seconds"] - summary["wall_seconds"],
                    "check_seconds": flower_unit["check_seconds"],
                    "actors": actors,
                    "per_round": breakdown,
                    "run_dir": summary["run_dir"],
                    **flower,
                },
                "inprocess_engine": {
                    **inprocess,
                    "peak_memory_gb": engine_summary["peak_memory_gb"],
                    FINAL_TEST_ACC: headline(engine_summary["final"]),
                    TEST_ACC_AT_BEST_VAL: headline(engine_summary["best"]),
                    "max_test_acc": engine_summary["max_test_acc"],
                    "seconds_per_round": engine_summary["seconds_per_round"],
                    "total_wall_seconds": engine_summary["total_wall_seconds"],
                },
                "local_eval": overrides["local-eval"],
            }
            entry["inprocess_engine_in_turn"] = in_turn
            entry["repeats"] = {
                "inprocess_engine": [summary["total_wall_seconds"] for _, summary in engines],
                "inprocess_engine_in_turn": [summary["total_wall_seconds"] for _, summary in in_turns],
                "in_process": [run["wall_seconds"] for run in plains],
            }
            if with_client_figures is not None:
                entry["inprocess_engine_local_eval"] = with_client_figures
            if baseline:
                entry["in_process"] = _median(plains, lambda run: run["wall_seconds"])
                plain = entry["in_process"]["wall_seconds"]
                # run to run (after the command's checks): the plain loop's time excludes its imports too
                entry["wall_ratio"] = entry["flwr_run"]["total_wall_seconds"] / plain
                entry["engine_ratio"] = entry["inprocess_engine"]["total_wall_seconds"] / plain
                entry["engine_in_turn_ratio"] = in_turn["total_wall_seconds"] / plain
                entry["engine_round_ratio"] = (
                    entry["inprocess_engine"]["seconds_per_round"] / entry["in_process"]["seconds_per_round"]
                )
                if with_client_figures is not None:
                    entry["engine_local_eval_ratio"] = with_client_figures["total_wall_seconds"] / plain
            entry["flower_repeats"] = [_repeat_figures(unit) for unit in flower_units]
            chosen = entry["flower_repeats"][flower_units.index(flower_unit)]
            if "floor" in flower_unit:  # Stamen's Flower run over the floor's, over the same span
                entry["flower_floor"] = {**flower_unit["floor"], "ratio": chosen["floor_ratio"]}
            if "library_floor" in flower_unit:
                library = flower_unit["library_floor"]
                entry["library_floor"] = {
                    **library,
                    "ratio": chosen["library_floor_ratio"],
                    "over_floor": library["wall_seconds"] / flower_unit["floor"]["wall_seconds"],
                }
            if ray_address:
                entry["ray_address"] = ray_address
            results.append(entry)
            print(strict_json.dumps(entry["flwr_run"]["per_round"]), flush=True)
    return results
