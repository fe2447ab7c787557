"""``stamen bench fedlog``: local generalization of FedLoG and its baselines, four settings.

Every algorithm runs on the same federations (one per client count and seed, with
unseen nodes, missing classes and a new client, see :mod:`stamen.graphs.settings`) through
the app's own round loop, strategies and ClientApp functions, in this process
(:mod:`stamen.simulations.inprocess`): a sweep of dozens of 100-round runs would not fit a
small machine as separate ``flwr run`` processes. The end-to-end tests run FedLoG
as real Flower processes.

Each setting's accuracy is the one at the round of best validation accuracy (never
chosen on test), for the clients' personalised models (after local training, as
FedLoG evaluates) and for the global model (the weights every client received; for
FedLoG with the global synthetic nodes as prototypes). ``fedlog-no-cd`` is FedLoG
with ``fedlog-beta-cd = 0``: the ablation without the synthetic-data loss.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

from stamen.benches.fedlog_selection import Selection, best_row
from stamen.benches.records import add_run_options, int_list, markdown_table, print_tables, run_in_processes
from stamen.common.options import finite_float
from stamen.contract.figures import TEST_ACC
from stamen.contract.run_config import RunConfig
from stamen.experiments.long_job import LongJob
from stamen.simulations.inprocess import flower_log_level, run_in_process
from stamen.simulations.overrides import parse_overrides

NAME = "fedlog"
HELP = "FedLoG and baselines on the four local-generalization settings"

VARIANTS: dict[str, dict[str, Any]] = {
    "local": {"algorithm": "local"},
    "fedavg": {"algorithm": "fedavg"},
    "fedprox": {"algorithm": "fedprox"},
    "fedlog": {"algorithm": "fedlog"},
    "fedlog-no-cd": {"algorithm": "fedlog", "fedlog-beta-cd": 0.0},
}
SETTINGS = (("seen", TEST_ACC), ("unseen node", "unseen_node_acc"), ("missing class", "missing_class_acc"))
SETTINGS += (("new client", "new_client_acc"),)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="cora")
    parser.add_argument("--data-root", default="")
    parser.add_argument("--clients", default="3,5,10", help="comma-separated client counts")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--algorithms", default=",".join(VARIANTS), help=f"comma-separated, of: {', '.join(VARIANTS)}")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--partitioner", default="louvain")
    parser.add_argument("--unseen-node-frac", type=finite_float, default=0.2)
    parser.add_argument("--missing-classes", type=int, default=2)
    parser.add_argument("--baseline-model", default="sage", help="model of local, fedavg, fedprox")
    parser.add_argument("--baseline-hidden", type=int, default=128)
    parser.add_argument("--csbm-nodes", type=int, default=3000)
    add_run_options(parser)


def run_config(args: argparse.Namespace, variant: str, num_clients: int, seed: int) -> RunConfig:
    values: dict[str, Any] = {
        "dataset": args.dataset,
        "data-root": str(Path(args.data_root).resolve()) if args.data_root else "",
        "partitioner": args.partitioner,
        "num-server-rounds": args.rounds,
        "seed": seed,
        "new-client": True,
        "unseen-node-frac": args.unseen_node_frac,
        "missing-classes": args.missing_classes,
        "model": args.baseline_model,
        "hidden": args.baseline_hidden,
        "min-clients": min(2, num_clients),
        **VARIANTS[variant],
    }
    if args.dataset == "csbm":
        values["csbm-nodes"] = args.csbm_nodes
    values.update(parse_overrides(args.set, "--run-config"))  # as stamen run -c: a bad value is one line
    return RunConfig.from_flower(values)


def at_best_validation(
    rows: list[dict[str, Any]], prefix: str, selection: Selection = Selection.STAMEN
) -> dict[str, float]:
    """Each setting's accuracy at the round ``selection`` picks (:mod:`stamen.benches.fedlog_selection`)."""
    best = best_row(rows, selection, prefix)
    if best is None:
        return {}
    figures = {label: best.get(prefix + key, float("nan")) for label, key in SETTINGS}
    figures["round"] = best["round"]
    return figures


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """Every (algorithm, client count, seed) federation; a unit is one of them."""
    variants = [a.strip() for a in args.algorithms.split(",") if a.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        raise ValueError(f"unknown algorithm(s) {unknown} for bench fedlog; choose from: {', '.join(VARIANTS)}")
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    clients, seeds = int_list(args.clients, "--clients"), [int(s) for s in args.seeds.split(",") if s.strip()]
    tasks = [(variant, k, seed) for k in clients for seed in seeds for variant in variants]
    keys = [f"{variant}/{k}/{seed}" for variant, k, seed in tasks]
    units.begin(keys)
    results: list[dict[str, Any]] = [units.kept(key) for key in keys if key in units]

    def report(entry: dict[str, Any]) -> None:
        line = (
            f"{_label(entry['algorithm'], entry['clients'], entry['seed'])}: {entry['wall_seconds']:.0f} s, "
            f"personalized {_short(entry['personalized'])}, global {_short(entry['global'])}"
        )
        key = f"{entry['algorithm']}/{entry['clients']}/{entry['seed']}"
        results.append(units.finish(key, entry, line))

    pending = [task for task, key in zip(tasks, keys) if key not in units]
    if args.jobs == 1:
        for task in pending:
            report(one_run(args, *task))
    else:
        settings = argparse.Namespace(**{k: v for k, v in vars(args).items() if k not in ("func", "module")})
        run_in_processes(one_run, [(settings, *task) for task in pending], args.jobs, report)
    order = {task: index for index, task in enumerate(tasks)}
    return sorted(results, key=lambda entry: order[(entry["algorithm"], entry["clients"], entry["seed"])])


def _label(variant: str, num_clients: int, seed: int) -> str:
    return f"{variant}, K={num_clients}, seed {seed}"


def one_run(args: argparse.Namespace, variant: str, num_clients: int, seed: int) -> dict[str, Any]:
    """One federation of ``variant``, in process, with a progress line every 10 rounds."""
    config = run_config(args, variant, num_clients, seed)
    label = _label(variant, num_clients, seed)
    rows: list[dict[str, Any]] = []

    def on_row(row: dict[str, Any]) -> None:
        rows.append(row)
        if row["round"] % 10 == 0 and row["round"] > 0:
            shown = {k: round(row[k], 3) for k in (TEST_ACC, "missing_class_acc") if k in row}
            print(f"  [{label}] round {row['round']}/{config.num_server_rounds} {shown}", flush=True)

    print(f"[bench fedlog] {label} ...", flush=True)
    started, cpu_started = time.perf_counter(), time.process_time()
    with flower_log_level(logging.WARNING):  # Flower's per-round INFO lines would drown the progress
        run_in_process(config, num_clients, on_row)
    return {
        "algorithm": variant,
        "clients": num_clients,
        "seed": seed,
        "wall_seconds": time.perf_counter() - started,
        # this process's user + system CPU time: the clients train here (in process), one torch thread each
        # with --jobs > 1; a machine's load moves it less than the wall time
        "cpu_seconds": time.process_time() - cpu_started,
        "personalized": at_best_validation(rows, ""),
        "global": at_best_validation(rows, "global_"),
        "personalized_authors": at_best_validation(rows, "", Selection.AUTHORS),
    }


def _short(figures: dict[str, float]) -> str:
    return " ".join(f"{label}={figures[label]:.3f}" for label, _ in SETTINGS if label in figures) or "-"


def summarize(results: list[dict[str, Any]], model: str) -> list[list[str]]:
    """Rows = algorithms; per client count, each setting's mean +- std over seeds; then wall time."""
    variants = list(dict.fromkeys(r["algorithm"] for r in results))
    clients = sorted({r["clients"] for r in results})
    table = []
    for variant in variants:
        row = [variant]
        for k in clients:
            runs = [r for r in results if r["algorithm"] == variant and r["clients"] == k and r[model]]
            for label, _ in SETTINGS:
                values = [100 * r[model][label] for r in runs]
                row.append(f"{mean(values):.1f} ± {pstdev(values):.1f}" if values else "-")
        walls = [r["wall_seconds"] for r in results if r["algorithm"] == variant]
        row.append(f"{mean(walls):.0f}")
        table.append(row)
    return table


def columns(results: list[dict[str, Any]]) -> list[str]:
    clients = sorted({r["clients"] for r in results})
    return ["algorithm"] + [f"K={k} {label}" for k in clients for label, _ in SETTINGS] + ["wall s / run"]


def markdown(record: dict[str, Any]) -> list[str]:
    results = record["results"]
    lines = [
        "Accuracy (%) at the round of best validation accuracy, mean ± std over seeds "
        f"{sorted({r['seed'] for r in results})}." + _overlap_note(record["setting"].get("jobs", 1)),
        "",
        "Personalised models (each client's model after its local training):",
        "",
        *markdown_table(columns(results), summarize(results, "personalized")),
        "",
        "Global model (the weights every client received):",
        "",
    ]
    global_rows = [row for row in summarize(results, "global") if row[0] != "local"]
    lines += markdown_table(columns(results), global_rows)
    if {"fedavg", "fedprox"} <= {r["algorithm"] for r in results}:
        lines += [
            "",
            "FedProx matches FedAvg here (up to rounding): the baselines train full-batch, so one local epoch "
            "is one step, taken at the global weights, where the proximal term's gradient is zero.",
        ]
    return lines + per_seed_lines(results)


PER_SEED_COLUMNS = [
    "K", "seed", "FedLoG seen", "FedAvg seen", "seen cost", "FedLoG missing class", "FedAvg missing class",
    "missing-class gain", "rounds (FedLoG, FedAvg)", "wall s (FedLoG, FedAvg)", "CPU s (FedLoG, FedAvg)",
]  # fmt: skip
SELECTIONS = {
    "personalized": "Stamen's selection (best pooled validation accuracy, earliest of ties)",
    "personalized_authors": "the authors' selection (validation accuracies weighted by missing-class nodes, "
    "latest of ties)",
}


def per_seed(results: list[dict[str, Any]], model: str) -> list[list[str]]:
    """FedLoG against FedAvg per (client count, seed), the clients' models at the round ``model``'s rule picks:
    the seen-graph cost (FedLoG minus FedAvg) and the missing-class gain, in points."""
    entries = {(r["algorithm"], r["clients"], r["seed"]): r for r in results}
    table = []
    for k, seed in sorted({(k, seed) for a, k, seed in entries if a == "fedlog" and ("fedavg", k, seed) in entries}):
        pair = entries[("fedlog", k, seed)], entries[("fedavg", k, seed)]
        fedlog, fedavg = (entry.get(model) or {} for entry in pair)
        if not fedlog or not fedavg:
            table.append([str(k), str(seed), *["-"] * (len(PER_SEED_COLUMNS) - 2)])
            continue
        seen = [100 * fedlog["seen"], 100 * fedavg["seen"]]
        missing = [100 * fedlog["missing class"], 100 * fedavg["missing class"]]
        table.append(
            [str(k), str(seed), f"{seen[0]:.1f}", f"{seen[1]:.1f}", f"{seen[0] - seen[1]:+.1f}", f"{missing[0]:.1f}",
             f"{missing[1]:.1f}", f"{missing[0] - missing[1]:+.1f}", f"{fedlog['round']}, {fedavg['round']}",
             ", ".join(f"{e['wall_seconds']:.0f}" for e in pair), ", ".join(_cpu(e) for e in pair)]
        )  # fmt: skip
    return table


def _cpu(entry: dict[str, Any]) -> str:
    return f"{entry['cpu_seconds']:.0f}" if "cpu_seconds" in entry else "-"  # not recorded before cpu_seconds


def per_seed_lines(results: list[dict[str, Any]]) -> list[str]:
    """The per-seed tables, one per selection rule, where the results hold FedLoG and FedAvg runs."""
    lines: list[str] = []
    for model, rule in SELECTIONS.items():
        table = per_seed(results, model)
        if table:
            lines += ["", f"Per seed, the clients' models, {rule}:", "", *markdown_table(PER_SEED_COLUMNS, table)]
    return lines


def _overlap_note(jobs: int) -> str:
    if jobs == 1:
        return ""
    return f" {jobs} runs at once, one per process: each wall time includes sharing the machine with the others."


def print_table(record: dict[str, Any]) -> None:
    print_tables(
        [
            (
                f"stamen bench {record['name']}: {model} models, accuracy % (mean ± std over seeds)",
                columns(record["results"]),
                [row for row in summarize(record["results"], model) if not (model == "global" and row[0] == "local")],
            )
            for model in ("personalized", "global")
        ]
    )
