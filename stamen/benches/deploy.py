"""``stamen bench deploy``: the same FedAvg job as a simulation and as a real deployment.

The deployment is :class:`stamen.simulations.deploy.local.LocalDeployment` (SuperLink and
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

``--clients 3,10,20`` repeats the comparison for each node count (one unit each, a simulation
and a deployment measured side by side) and adds the deployment's cost per round against the
node count, with a least-squares line through the counts: its slope is the cost of one more
SuperNode (set-up seconds, seconds per round, engine seconds, GB of memory), its intercept
what any deployment pays. The deployment's peak memory is that of every process it started
(SuperLink, SuperNodes, ClientApp launchers, ServerApp, ``flwr``), sampled as one sum.
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

from stamen.benches.records import int_list, markdown_table, print_tables
from stamen.benches.sim import per_round_breakdown
from stamen.common.options import renamed
from stamen.contract.figures import FINAL_TEST_ACC, GLOBAL_TEST_ACC
from stamen.contract.provenance import Provenance
from stamen.contract.run_config import RunConfig
from stamen.experiments.long_job import LongJob
from stamen.graphs.node_data import export_partitions
from stamen.simulations import lifetime, runner
from stamen.simulations.deploy.local import LocalDeployment
from stamen.simulations.deploy.warm_clientapp import add_clientapps_option
from stamen.simulations.deploy.workdir import held_workdir
from stamen.simulations.federation_config import FederationConfig
from stamen.simulations.flower import PeakMemory
from stamen.simulations.runner import Engine

NAME = "deploy"
STARTUP_SECONDS_PER_NODE = 15.0  # a SuperNode and its launcher (PyTorch, PyG, Flower imported) start in ~4 CPU s
HELP = "wall time per round: real deployment (TLS, node auth) against simulation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--clients", dest="nodes", default="3", help="SuperNode counts, e.g. 3,10,20")
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
        lifetime.run([sys.executable, "-c", "import stamen.client.app, stamen.client.handlers"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """One comparison per node count, a unit each: a simulation and a deployment measured side by side in one
    command, on one state of the machine (split into two units, a resumed comparison would set runs of two
    commands side by side), and the deployment's folder is cleared at its start."""
    counts = int_list(str(args.nodes), "--clients")
    keys = ["comparison" if len(counts) == 1 else f"{n} nodes" for n in counts]
    units.begin(keys)
    return [
        units.run(
            key, _compare, args, n, line=lambda found: f"{found['nodes']} nodes: simulation and deployment measured"
        )
        for key, n in zip(keys, counts, strict=True)
    ]


def _compare(args: argparse.Namespace, nodes: int) -> dict[str, Any]:
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
        return _measure(args, nodes, out, job, workdir)


def _measure(args: argparse.Namespace, nodes: int, out: Path, job: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """The simulation, then the deployment of the same job on ``nodes`` nodes in ``workdir``, side by side."""
    print(f"[bench deploy] simulation, {nodes} clients, {args.rounds} rounds ...", flush=True)
    names = {"simulation": f"simulation-{nodes}", "deployment": f"deployment-{nodes}"}
    simulated = runner.run(
        RunConfig.from_mapping({**job, "run-name": names["simulation"]}),
        federation=FederationConfig(num_supernodes=nodes, client_resources_num_cpus=1),
        engine=Engine.FLOWER,
        provenance=Provenance.of_process(),
    )
    summary = simulated.summary
    assert summary is not None  # a new run (overwrite=true): never one that had nothing left
    simulation = {
        "total_wall_seconds": summary["total_wall_seconds"],  # from the engine's start, the checks before it not
        "actors": (actors := max(1, min(nodes, os.cpu_count() or 1))),
        "per_round": per_round_breakdown(_rows(Path(summary["run_dir"])), actors),
        "peak_memory_gb": summary["peak_memory_gb"],
        FINAL_TEST_ACC: summary["final"].get(GLOBAL_TEST_ACC),
    }

    clientapps = args.clientapps
    print(
        f"[bench deploy] deployment, {nodes} SuperNodes, {clientapps} ClientApps, {args.rounds} rounds ...",
        flush=True,
    )
    config = RunConfig.from_flower({**job, "run-name": names["deployment"]})
    roots = [p.parent for p in export_partitions(config.federation(nodes), workdir / "data")]
    started = time.perf_counter()
    # every process the deployment starts is a descendant of this one (namespaces change no parentage)
    with (
        PeakMemory(os.getpid(), include_root=False) as memory,
        LocalDeployment(
            workdir,
            nodes,
            {"device": "cpu"},
            roots,
            use_namespaces=False if args.loopback else None,
            clientapps=clientapps,
            startup_timeout=max(120.0, STARTUP_SECONDS_PER_NODE * nodes),
        ) as deployment,
    ):
        set_up = time.perf_counter() - started
        code = deployment.run({**job, "run-name": names["deployment"]})
        mode = deployment.mode
    if code != 0:
        raise RuntimeError(f"the deployed run failed (flwr exit code {code}); logs in {workdir / 'logs'}")
    run_dir = out / names["deployment"]
    deployed = {
        "mode": mode,
        "clientapps": clientapps,
        "set_up_seconds": set_up,
        "total_wall_seconds": time.perf_counter() - started,
        "actors": nodes,  # one ClientApp process per node at a time
        "per_round": per_round_breakdown(_rows(run_dir), nodes),
        "peak_memory_gb": memory.peak_gb,
        FINAL_TEST_ACC: json.loads((run_dir / "summary.json").read_text())["final"].get(GLOBAL_TEST_ACC),
    }
    print("[bench deploy] timing fresh ClientApp imports ...", flush=True)
    return {
        "nodes": nodes,
        "rounds": args.rounds,
        "simulation": simulation,
        "deployment": deployed,
        "same_final_accuracy": deployed[FINAL_TEST_ACC] == simulation[FINAL_TEST_ACC],
        "client_import_seconds": client_import_seconds(args.import_samples),
    }


COLUMNS = [
    "nodes",
    "engine",
    "wall s",
    "set-up s",
    "round 1 s",
    "s / later round",
    "exchange s",
    "client handler s (slowest)",
    "engine s",
    "peak GB",
    "final test acc",
]


def _cell(figures: dict[str, Any], key: str, digits: int) -> str:
    return f"{figures[key]:.{digits}f}" if figures.get(key) is not None else "-"


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
                    str(entry["nodes"]),
                    label,
                    f"{figures['total_wall_seconds']:.1f}",
                    _cell(figures, "set_up_seconds", 1),
                    f"{per_round['first_round_seconds']:.1f}",
                    f"{per_round['seconds']:.2f}",
                    f"{per_round['exchange_seconds']:.2f}",
                    _cell(per_round, "client_handler_seconds_max", 2),
                    _cell(per_round, "engine_seconds", 2),
                    _cell(figures, "peak_memory_gb", 2),
                    f"{figures['final_test_acc']:.4f}",
                ]
            )
    return table


# the deployment's cost against the node count: (column, where in an entry's deployment figures, digits)
GROWTH = [
    ("set-up s", ("set_up_seconds",), 1),
    ("round 1 s", ("per_round", "first_round_seconds"), 1),
    ("s / later round", ("per_round", "seconds"), 2),
    ("exchange s", ("per_round", "exchange_seconds"), 2),
    ("engine s", ("per_round", "engine_seconds"), 2),
    ("peak GB", ("peak_memory_gb",), 2),
]


def _figure(entry: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = entry["deployment"]
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares ``(intercept, slope)`` of ``ys`` against ``xs`` (at least two distinct ``xs``)."""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    return mean_y - slope * mean_x, slope


def growth(record: dict[str, Any]) -> tuple[list[list[str]], dict[str, tuple[float, float]]]:
    """The deployment's cost per node count (rows) and each figure's fitted ``(intercept, per node)``."""
    entries = sorted(record["results"], key=lambda entry: entry["nodes"])
    table = [
        [str(e["nodes"]), *(f"{v:.{d}f}" if (v := _figure(e, path)) is not None else "-" for _, path, d in GROWTH)]
        for e in entries
    ]
    fits = {}
    if len({e["nodes"] for e in entries}) >= 2:
        for column, path, _ in GROWTH:
            points = [(e["nodes"], v) for e in entries if (v := _figure(e, path)) is not None]
            if len({n for n, _ in points}) >= 2:
                fits[column] = fit_line([float(n) for n, _ in points], [float(v) for _, v in points])
    if fits:
        table.append(["per node (slope)", *(f"{fits[c][1]:+.{d + 1}f}" if c in fits else "-" for c, _, d in GROWTH)])
    return table, fits


def _growth_sentence(record: dict[str, Any], fits: dict[str, tuple[float, float]]) -> str:
    """How the deployment's cost grows: each fitted figure's slope per SuperNode, and the set-up's intercept."""
    counts = sorted(e["nodes"] for e in record["results"])
    said = {
        "set-up s": "{:.2f} s of set-up",
        "s / later round": "{:.3f} s to each later round",
        "engine s": "{:.3f} s of engine time a round",
        "peak GB": "{:.3f} GB of memory",
    }
    parts = [text.format(fits[column][1]) for column, text in said.items() if column in fits]
    line = f"From {counts[0]} to {counts[-1]} SuperNodes (least squares over {len(counts)} counts), each further "
    line += f"SuperNode adds {', '.join(parts)}."
    if "set-up s" in fits:
        line += f" What any deployment pays besides (the intercept): {fits['set-up s'][0]:.1f} s of set-up"
        if "s / later round" in fits:
            line += f", {fits['s / later round'][0]:.2f} s a later round"
        line += "."
    return line


def _notes(entry: dict[str, Any]) -> list[str]:
    same = entry.get("same_final_accuracy")
    lines = []
    if same is not None:
        lines.append(
            f"{entry['nodes']} nodes: same final test accuracy in simulation and deployment: {'yes' if same else 'NO'}."
        )
    return lines


def _import_note(record: dict[str, Any]) -> str:
    seconds = statistics.median(entry["client_import_seconds"] for entry in record["results"])
    return (
        f"A fresh ClientApp process (Python + PyTorch + PyG + the app) takes {seconds:.1f} s "
        "to import on this machine; Flower 1.42's SuperNode starts one per message (cold ClientApps), forked "
        "ClientApps fork one from the warm launcher, and resident ones serve every message in the launcher, "
        "the app loaded once. The SuperNode checks for a ClientApp's reply every 0.5 s (fixed in Flower)."
    )


def _growth_title() -> str:
    return "Deployment cost against the node count"


def markdown(record: dict[str, Any]) -> list[str]:
    lines = markdown_table(COLUMNS, rows(record))
    for entry in record["results"]:
        lines += ["", *_notes(entry)]
    lines += ["", _import_note(record)]
    if len(record["results"]) > 1:
        table, fits = growth(record)
        lines += ["", f"{_growth_title()}:", "", *markdown_table(["nodes", *(c for c, _, _ in GROWTH)], table)]
        if fits:
            lines += ["", _growth_sentence(record, fits)]
    return lines


def print_table(record: dict[str, Any]) -> None:
    tables = [(f"stamen bench {record['name']}", COLUMNS, rows(record))]
    fits: dict[str, tuple[float, float]] = {}
    if len(record["results"]) > 1:
        table, fits = growth(record)
        tables.append((_growth_title(), ["nodes", *(c for c, _, _ in GROWTH)], table))
    print_tables(tables)
    for entry in record["results"]:
        for line in _notes(entry):
            print(line)
    print(_import_note(record))
    if fits:
        print(_growth_sentence(record, fits))
