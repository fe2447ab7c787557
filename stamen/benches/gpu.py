"""``stamen bench gpu``: the same federation with every client training on the CPU, then on a GPU.

Each run goes through the app's own round loop, strategies and ClientApp functions in
this process (:func:`stamen.simulations.inprocess.run_in_process`); the only difference
between two runs of a model is the run config's ``device``, which each client resolves
itself (:func:`stamen.client.device.choose_device`). The devices the clients reported are
recorded with the figures, so a run that fell back to the CPU cannot pass for a GPU run.

Round 1 carries one-off costs (building the partitions, moving them to the device,
CUDA's start), so the steady-state figures average rounds 2 and later.
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from pathlib import Path
from statistics import mean
from typing import Any

import torch

from stamen.benches.records import int_list, markdown_table, print_tables
from stamen.contract.figures import GLOBAL_TEST_ACC, GLOBAL_VAL_ACC, TEST_ACC_AT_BEST_VAL
from stamen.contract.run_config import RunConfig
from stamen.experiments.long_job import LongJob
from stamen.simulations.inprocess import flower_log_level, run_in_process

NAME = "gpu"
HELP = "per-client training on a GPU against the CPU: seconds per round, accuracy, GPU memory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="csbm")
    parser.add_argument("--data-root", default="")
    parser.add_argument("--csbm-nodes", default="3000,100000", help="comma-separated csbm sizes")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--partitioner", default="metis", help="metis: Louvain takes minutes on 100,000 nodes")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--local-epochs", type=int, default=5)
    parser.add_argument("--models", default="gcn,sage,gat", help="comma-separated model names")
    parser.add_argument("--devices", default="cpu,cuda", help="comma-separated: cpu, cuda, cuda:N")
    parser.add_argument("--seed", type=int, default=0)


def _names(text: str, what: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError(f"{what} must name at least one value, got {text!r}")
    return names


def check_devices(devices: list[str]) -> None:
    """Refuse a GPU run on a machine without one, instead of timing a silent CPU fallback."""
    for device in devices:
        if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
            raise ValueError(f"--devices takes cpu, cuda or cuda:N, got {device!r}")
    wanted = [d for d in devices if d.startswith("cuda")]
    if wanted and not torch.cuda.is_available():
        raise ValueError(f"--devices asks for {', '.join(wanted)} but no CUDA device is visible; use --devices cpu")
    for device in wanted:
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ValueError(f"--devices asks for {device} but {torch.cuda.device_count()} CUDA device(s) are visible")


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """One run per graph size, model and device; a unit is one run."""
    models, devices = _names(args.models, "--models"), _names(args.devices, "--devices")
    sizes = int_list(args.csbm_nodes, "--csbm-nodes") if args.dataset == "csbm" else [0]
    check_devices(devices)
    if args.rounds < 2:
        raise ValueError(f"--rounds must be at least 2 (round 1 is set-up), got {args.rounds}")
    plan = [(size, model, device) for size in sizes for model in models for device in devices]
    units.begin([f"{size}/{model}/{device}" for size, model, device in plan])
    return [
        units.run(
            f"{size}/{model}/{device}",
            *(one_run, args, model, device, size),
            line=lambda entry, label=f"{model} on {device}, csbm {size or '-'}": _line(label, entry),
        )
        for size, model, device in plan
    ]


def one_run(args: argparse.Namespace, model: str, device: str, csbm_nodes: int) -> dict[str, Any]:
    """One federated run of ``model`` with every client on ``device``."""
    values: dict[str, Any] = {
        "dataset": args.dataset,
        "data-root": str(Path(args.data_root).resolve()) if args.data_root else "",
        "partitioner": args.partitioner,
        "model": model,
        "device": device,
        "num-server-rounds": args.rounds,
        "local-epochs": args.local_epochs,
        "seed": args.seed,
        "min-clients": min(2, args.clients),
    }
    if csbm_nodes:
        values["csbm-nodes"] = csbm_nodes
    config = RunConfig.from_flower(values)
    label = f"{args.dataset}{f'-{csbm_nodes}' if csbm_nodes else ''} {model} on {device}"
    print(f"[bench gpu] {label} ...", flush=True)
    gpu = torch.device(device) if device.startswith("cuda") else None
    if gpu is not None:
        torch.cuda.reset_peak_memory_stats(gpu)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with flower_log_level(logging.WARNING):  # Flower's per-round INFO lines would drown the progress
        run_in_process(config, args.clients, rows.append)
    wall = time.perf_counter() - started
    trained = [row for row in rows if "client_train_seconds_sum" in row]
    steady = [row for row in trained if row["round"] >= 2]
    best = max((row for row in rows if GLOBAL_VAL_ACC in row), key=lambda row: row[GLOBAL_VAL_ACC])
    entry = {
        "dataset": args.dataset,
        "csbm_nodes": csbm_nodes or None,
        "partitioner": args.partitioner,
        "model": model,
        "device": device,
        "client_devices": sorted({d for row in trained for d in row["devices"]}),
        "wall_seconds": wall,
        "first_round_seconds": trained[0]["seconds"],
        "seconds_per_round": mean(row["seconds"] for row in steady),
        "client_train_seconds_per_round": mean(row["client_train_seconds_sum"] for row in steady),
        TEST_ACC_AT_BEST_VAL: best[GLOBAL_TEST_ACC],
        "best_val_round": best["round"],
        "gpu_peak_memory_mb": torch.cuda.max_memory_allocated(gpu) / 2**20 if gpu is not None else None,
    }
    return entry


def _line(label: str, entry: dict[str, Any]) -> str:
    """What a finished run shows."""
    return (
        f"{label}: {entry['seconds_per_round']:.3f} s/round, clients on {entry['client_devices']}, "
        f"test acc {entry['test_acc_at_best_val']:.3f}"
    )


COLUMNS = [
    "graph",
    "model",
    "device",
    "clients ran on",
    "s / round",
    "client train s / round",
    "speed-up",
    "round 1 s",
    "test acc",
    "GPU peak MB",
]


def rows(record: dict[str, Any]) -> list[list[str]]:
    """One row per run; the speed-up is against the CPU run of the same graph and model."""
    results = record["results"]

    def cpu_seconds(entry: dict[str, Any]) -> float | None:
        for other in results:
            same = all(other[k] == entry[k] for k in ("dataset", "csbm_nodes", "model"))
            if same and other["device"] == "cpu":
                return other["seconds_per_round"]
        return None

    table = []
    for entry in results:
        reference = cpu_seconds(entry)
        graph = entry["dataset"] + (f" {entry['csbm_nodes']} nodes" if entry["csbm_nodes"] else "")
        memory = entry["gpu_peak_memory_mb"]
        table.append(
            [
                graph,
                entry["model"],
                entry["device"],
                ", ".join(entry["client_devices"]),
                f"{entry['seconds_per_round']:.3f}",
                f"{entry['client_train_seconds_per_round']:.3f}",
                f"{reference / entry['seconds_per_round']:.1f}x" if reference else "-",
                f"{entry['first_round_seconds']:.2f}",
                f"{entry['test_acc_at_best_val']:.3f}",
                f"{memory:.0f}" if memory is not None else "-",
            ]
        )
    return table


def markdown(record: dict[str, Any]) -> list[str]:
    setting = record["setting"]
    return [
        f"{setting['clients']} clients ({setting['partitioner']}), {setting['rounds']} rounds of "
        f"{setting['local_epochs']} local epochs, seed {setting['seed']}, in process (one process, clients one "
        "after another). Seconds per round average rounds 2 and later; the speed-up is the CPU run's seconds per "
        "round over this run's.",
        *([f"GPU: {record['machine']['gpu']}."] if record["machine"].get("gpu") else []),
        "",
        *markdown_table(COLUMNS, rows(record)),
    ]


def print_table(record: dict[str, Any]) -> None:
    print_tables([(f"stamen bench {record['name']}: per-client training, CPU against GPU", COLUMNS, rows(record))])
