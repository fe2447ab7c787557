"""``stamen bench deploy``: the same FedAvg job as a simulation and as a real deployment.

The deployment is :class:`simulations.deploy.local.LocalDeployment` (SuperLink and
SuperNodes as separate hosts in network namespaces when root, TLS and node
authentication on, each node reading its exported partition, a ClientApp launcher
beside each SuperNode that serves its messages as ``--clientapps`` says); the simulation is
``stamen run`` with as many simulated SuperNodes. Both write ``metrics.jsonl``; the
per-round ``seconds`` (server side: send, wait, aggregate) are compared, split into
the clients' own handler time and what the exchange took beyond it (``engine``:
message passing, polling, process start-up). The cost of starting one cold ClientApp
process (Python, PyTorch, PyG and the app imported afresh, which Flower 1.42's
SuperNode pays for every message unless the launcher has them imported) is measured
on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from contract.figures import FINAL_TEST_ACC, GLOBAL_TEST_ACC
from contract.run_config import RunConfig
from graphs.node_data import export_partitions
from simulations import lifetime
from simulations.benches.records import markdown_table, print_tables
from simulations.benches.sim import per_round_breakdown
from simulations.commands.run import simulate
from simulations.deploy.local import LocalDeployment
from simulations.deploy.warm_clientapp import add_clientapps_option
from simulations.deploy.workdir import held_workdir
from simulations.long_job import LongJob
from simulations.options import renamed
from simulations.preflight import prepare

NAME = "deploy"
HELP = "wall time per round: real deployment (TLS, node auth) against simulation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", dest="nodes", type=int, default=3)
    renamed(parser, "--nodes", "--clients")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--csbm-nodes", type=int, default=900)
    parser.add_argument("--local-epochs", type=int, default=5)
    parser.add_argument("--loopback", action="store_true", help="no network namespaces")
    parser.add_argument("--import-samples", type=int, default=3, help="fresh processes timing the ClientApp imports")
    add_clientapps_option(parser)


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def client_import_seconds(samples: int) -> float:
    """Median wall time of a fresh Python process importing the ClientApp and its handlers (what each message pays)."""
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        lifetime.run([sys.executable, "-c", "import client.app, client.handlers"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """The comparison, one unit: a simulation and a deployment measured side by side in one session, on one
    state of the machine (split into two units, a resumed comparison would set runs of two sessions side by
    side), and the deployment's folder is cleared at its start."""
    units.begin(["comparison"])
    return [units.run("comparison", _compare, args, line=lambda found: "simulation and deployment measured")]


def _compare(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out).resolve() / "runs" / "deploy"  # benchmarks/runs/ is not versioned
    job = {
        "num-server-rounds": args.rounds,
        "csbm-nodes": args.csbm_nodes,
        "local-epochs": args.local_epochs,
        "device": "cpu",
        "output-dir": str(out),
        "overwrite": True,
    }
    # the deployment's folder, checked (and an earlier bench's cleared) before anything slow, and ours alone
    with held_workdir(out / "deployment-work") as workdir:
        return _measure(args, out, job, workdir)


def _measure(args: argparse.Namespace, out: Path, job: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """The simulation, then the deployment of the same job in ``workdir``; their figures side by side."""
    print(f"[bench deploy] simulation, {args.nodes} clients, {args.rounds} rounds ...", flush=True)
    run = prepare(
        [" ".join(f"{k}={json.dumps(v)}" for k, v in {**job, "run-name": "simulation"}.items())],
        [f"num-supernodes={args.nodes} client-resources-num-cpus=1"],
    )
    started = time.perf_counter()
    summary = simulate(run, mode="quiet")
    simulation = {
        "total_wall_seconds": time.perf_counter() - started,
        "actors": (actors := max(1, min(args.nodes, os.cpu_count() or 1))),
        "per_round": per_round_breakdown(_rows(Path(summary["run_dir"])), actors),
        FINAL_TEST_ACC: summary["final"][GLOBAL_TEST_ACC],
    }

    clientapps = args.clientapps
    print(
        f"[bench deploy] deployment, {args.nodes} SuperNodes, {clientapps} ClientApps, {args.rounds} rounds ...",
        flush=True,
    )
    config = RunConfig.from_flower({**job, "run-name": "deployment"})
    roots = [p.parent for p in export_partitions(config.federation(args.nodes), workdir / "data")]
    started = time.perf_counter()
    with LocalDeployment(
        workdir,
        args.nodes,
        {"device": "cpu"},
        roots,
        use_namespaces=False if args.loopback else None,
        clientapps=clientapps,
    ) as deployment:
        set_up = time.perf_counter() - started
        code = deployment.run({**job, "run-name": "deployment"})
        mode = deployment.mode
    if code != 0:
        raise RuntimeError(f"the deployed run failed (flwr exit code {code}); logs in {workdir / 'logs'}")
    run_dir = out / "deployment"
    deployed = {
        "mode": mode,
        "clientapps": clientapps,
        "set_up_seconds": set_up,
        "total_wall_seconds": time.perf_counter() - started,
        "actors": args.nodes,  # one ClientApp process per node at a time
        "per_round": per_round_breakdown(_rows(run_dir), args.nodes),
        FINAL_TEST_ACC: json.loads((run_dir / "summary.json").read_text())["final"][GLOBAL_TEST_ACC],
    }
    print("[bench deploy] timing fresh ClientApp imports ...", flush=True)
    return {
        "nodes": args.nodes,
        "rounds": args.rounds,
        "simulation": simulation,
        "deployment": deployed,
        "same_final_accuracy": deployed[FINAL_TEST_ACC] == simulation[FINAL_TEST_ACC],
        "client_import_seconds": client_import_seconds(args.import_samples),
    }


COLUMNS = [
    "engine",
    "wall s",
    "set-up s",
    "round 1 s",
    "s / later round",
    "exchange s",
    "client handler s (slowest)",
    "engine s",
    "final test acc",
]


def rows(record: dict[str, Any]) -> list[list[str]]:
    table = []
    for entry in record["results"]:
        for engine, figures in (("simulation (Ray)", entry["simulation"]), ("deployment", entry["deployment"])):
            per_round = figures["per_round"]
            if engine.startswith("sim"):
                label = engine
            else:
                label = f"deployment ({figures['mode']}, {figures.get('clientapps', 'cold')} ClientApps)"
            table.append(
                [
                    label,
                    f"{figures['total_wall_seconds']:.1f}",
                    f"{figures['set_up_seconds']:.1f}" if "set_up_seconds" in figures else "-",
                    f"{per_round['first_round_seconds']:.1f}",
                    f"{per_round['seconds']:.2f}",
                    f"{per_round['exchange_seconds']:.2f}",
                    f"{per_round['client_handler_seconds_max']:.2f}"
                    if "client_handler_seconds_max" in per_round
                    else "-",
                    f"{per_round['engine_seconds']:.2f}" if "engine_seconds" in per_round else "-",
                    f"{figures['final_test_acc']:.4f}",
                ]
            )
    return table


def _notes(entry: dict[str, Any]) -> list[str]:
    same = entry.get("same_final_accuracy")
    lines = []
    if same is not None:
        lines.append(f"Same final test accuracy in simulation and deployment: {'yes' if same else 'NO'}.")
    lines.append(
        f"A fresh ClientApp process (Python + PyTorch + PyG + the app) takes {entry['client_import_seconds']:.1f} s "
        "to import on this machine; Flower 1.42's SuperNode starts one per message (cold ClientApps), forked "
        "ClientApps fork one from the warm launcher, and resident ones serve every message in the launcher, "
        "the app loaded once. The SuperNode checks for a ClientApp's reply every 0.5 s (fixed in Flower)."
    )
    return lines


def markdown(record: dict[str, Any]) -> list[str]:
    lines = markdown_table(COLUMNS, rows(record))
    for entry in record["results"]:
        lines += ["", *_notes(entry)]
    return lines


def print_table(record: dict[str, Any]) -> None:
    print_tables([(f"stamen bench {record['name']}", COLUMNS, rows(record))])
    for entry in record["results"]:
        for line in _notes(entry):
            print(line)
