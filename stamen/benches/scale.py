"""``stamen bench scale``: how time and memory grow with the graph and the number of clients.

For each csbm size (``--nodes``) and client count (``--clients``) it runs ``stamen run``
as a user types it, on each engine of ``--engines``, in a fresh process: the time to
generate and partition the graph (the CLI's checks, which cache the partition for the
clients), the seconds per round after the first, the part of a round beyond the
clients' own handlers (the engine's overhead), and the peak memory of every process
of the run. A job that fails or passes ``--timeout`` is recorded as such, with its
reason: that is where the first limit lies.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from statistics import mean
from typing import Any

from stamen.benches.records import final_acc, int_list, markdown_table, print_tables
from stamen.common.options import add_ray_address, finite_float
from stamen.contract import strict_json
from stamen.contract.figures import FINAL_TEST_ACC, GLOBAL_TEST_ACC
from stamen.experiments.long_job import LongJob
from stamen.simulations import lifetime

NAME = "scale"
HELP = "time to partition, per round and peak memory against graph size and client count, both engines"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", default="10000,100000,1000000", help="csbm sizes")
    parser.add_argument("--clients", default="10,100,1000", help="client counts")
    parser.add_argument("--engines", default="inprocess,flower", help="engines to run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partitioner", default="metis", help="metis scales; louvain takes minutes at 100k nodes")
    parser.add_argument("--timeout", type=finite_float, default=900.0, help="seconds a job may take")
    add_ray_address(parser)


def _job(args: argparse.Namespace, nodes: int, clients: int, engine: str, out: Path) -> dict[str, Any]:
    name = f"n{nodes}-k{clients}-{engine}-{time.strftime('%H%M%S')}"
    config = (
        f"csbm-nodes={nodes} num-server-rounds={args.rounds} partitioner='{args.partitioner}' "
        f"output-dir='{out}' run-name='{name}' min-clients=1"
    )
    command = [sys.executable, "-m", "stamen.cli.main", "run", "--quiet", "--engine", engine]
    command += ["--clients", str(clients), "-c", config]
    if engine == "flower" and args.ray_address:
        command += ["--ray-address", args.ray_address]
    entry: dict[str, Any] = {"nodes": nodes, "clients": clients, "engine": engine}
    started = time.perf_counter()
    process = lifetime.start(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = process.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        lifetime.stop(process)
        entry.update(status="timeout", reason=f"over {args.timeout:.0f} s")
        return entry
    except KeyboardInterrupt:
        lifetime.stop(process)
        raise
    result = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    entry["command_seconds"] = time.perf_counter() - started
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        entry.update(status="failed", reason=lines[-1] if lines else f"exit {result.returncode}")
        return entry
    run_dir = out / name
    summary = json.loads((run_dir / "summary.json").read_text())
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    later = [r for r in rows if r.get("round", 0) >= 2 and "seconds" in r] or [r for r in rows if "seconds" in r]
    actors = 1 if engine == "inprocess" else 2
    # memory on every node: the command's machine, and the clients' processes wherever they ran (a Ray cluster)
    entry["client_peak_memory_gb"] = summary.get("client_peak_memory_gb")
    entry.update(
        status="finished",
        run_seconds=summary["total_wall_seconds"],
        # the CLI's checks load, generate and partition the graph before the run starts
        partition_seconds=entry["command_seconds"] - summary["total_wall_seconds"],
        seconds_per_round=mean(r["seconds"] for r in later),
        client_seconds_per_round=mean(r["client_handler_seconds_sum"] for r in later),
        overhead_per_round=mean(r["exchange_seconds"] - r["client_handler_seconds_sum"] / actors for r in later),
        peak_memory_gb=summary["peak_memory_gb"],
        **{FINAL_TEST_ACC: summary["final"].get(GLOBAL_TEST_ACC)},
    )
    return entry


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """One ``stamen run`` job per size, client count and engine; a unit is one job (a failure or timeout too)."""
    out = Path(args.out).resolve() / "runs" / "scale"
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    plan = [
        (n, k, e) for n in int_list(args.nodes, "--nodes") for k in int_list(args.clients, "--clients") for e in engines
    ]
    units.begin([f"{n}/{k}/{e}" for n, k, e in plan])
    results = []
    for nodes, clients, engine in plan:
        if f"{nodes}/{clients}/{engine}" not in units:
            print(f"[bench scale] {nodes} nodes, {clients} clients, {engine} ...", flush=True)
        results.append(
            units.run(
                f"{nodes}/{clients}/{engine}",
                *(_job, args, nodes, clients, engine, out),
                line=lambda entry: strict_json.dumps(entry),
            )
        )
    return results


COLUMNS = ["nodes", "clients", "engine", "status", "partition s", "s / round", "clients' handlers s / round",
           "overhead s / round", "peak GB", "test acc"]  # fmt: skip


def rows(record: dict[str, Any]) -> list[list[str]]:
    out = []
    for e in record["results"]:
        if e["status"] != "finished":
            out.append([str(e["nodes"]), str(e["clients"]), e["engine"], f"{e['status']}: {e['reason']}"] + ["-"] * 6)
            continue
        out.append(
            [
                str(e["nodes"]),
                str(e["clients"]),
                e["engine"],
                "finished",
                f"{e['partition_seconds']:.1f}",
                f"{e['seconds_per_round']:.3f}",
                f"{e['client_seconds_per_round']:.3f}",
                f"{e['overhead_per_round']:.3f}",
                f"{e['peak_memory_gb']:.2f}",
                f"{final_acc(e):.3f}",
            ]  # fmt: skip
        )
    return out


def markdown(record: dict[str, Any]) -> list[str]:
    return markdown_table(COLUMNS, rows(record))


def print_table(record: dict[str, Any]) -> None:
    print_tables([(f"stamen bench {record['name']}", COLUMNS, rows(record))])
