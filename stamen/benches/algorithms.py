"""``stamen bench algorithms``: every registered FL algorithm, per dataset and partitioner, over seeds.

The algorithms are those the run's task admits (``--task``; :data:`stamen.contract.tasks.TASKS`: for node
classification, the default, every one of :data:`stamen.contract.algorithms.ALGORITHMS`), in the
registry's order, so an algorithm added there is benched with no change here. Each
(algorithm, dataset, partitioner, seed) is one federated run of the app's own round
loop, strategies and ClientApp, in this process (:mod:`stamen.simulations.inprocess`), with
the run config's defaults for everything the options below do not set.

What a run reports is the app's own summary (:func:`stamen.server.outputs.summarize`), read,
never recomputed: the round of best validation accuracy :math:`r^*` (on the global
model's validation accuracy where the algorithm keeps one, else on the clients'
models'), and at :math:`r^*` and at the final round

- the global model's test accuracy ``global_test_acc`` (the weights every client
  received; absent when the algorithm keeps none), and
- the clients' models' test accuracy ``test_acc``: every client's model after its
  local training, pooled over the clients' test nodes (the personalised figure of
  FedPer, FedRep, Ditto, FED-PUB, FedGTA, FedProto, FedLoG and ``local``).

With ``--centralised``, each dataset and partitioner also has a reference row, ``centralised``: the same
model and settings trained by the same engine over one client holding all the data
(:mod:`stamen.benches.centralised`).

Link prediction and graph classification tabulate their own figures
(:mod:`stamen.benches.task_tables`); the rest of this docstring is node classification's.

The table gives, per algorithm, the mean and population standard deviation of each
figure over the seeds, and the mean wall seconds per run. A setting an algorithm's
preconditions exclude (a Krum-family rule with too few clients, a model without the
encoder FedPer shares, ...) is checked before any run, with the app's own validation
(:meth:`stamen.contract.run_config.RunConfig.from_flower`, :func:`stamen.simulations.preflight.check_with_data`),
and listed as ``n/a: <the validation's reason>``.

OpenFGL (Xunkai Li, Yinlin Zhu, Boyang Pang, Guochen Yan, Zening Li, Yeyu Yan, Zhengyu
Wu, Wentao Zhang, Rong-Hua Li, Guoren Wang; "OpenFGL: A Comprehensive Benchmark for
Federated Graph Learning", PVLDB; arXiv 2408.16288, 2024) is the reference benchmark of
subgraph FL; :data:`OPENFGL` holds the figures of it we could read, beside ours.
"""

from __future__ import annotations

import argparse
import enum
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from stamen.benches import centralised, task_tables
from stamen.benches.records import add_run_options, markdown_table, print_tables, run_in_processes
from stamen.benches.task_tables import LINK_PREDICTION, NODE_CLASSIFICATION
from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.figures import GLOBAL_TEST_ACC, GLOBAL_TEST_AUC, TEST_AUC
from stamen.contract.run_config import RunConfig
from stamen.contract.tasks import TASKS, available
from stamen.experiments.long_job import LongJob
from stamen.experiments.sweep import parse_seeds
from stamen.graphs.names import GRAPH_SETS, graph_set_partitioners
from stamen.simulations.overrides import parse_overrides
from stamen.simulations.preflight import check_with_data

NAME = "algorithms"
HELP = "every registered FL algorithm per dataset and partitioner, mean ± std over seeds"

# OpenFGL's figures for (algorithm, dataset, partitioner, clients): (test accuracy %, source and table).
# Empty: no figure of OpenFGL for these settings could be read. Routes tried: the repository
# github:xkLi-Allen/OpenFGL (README.md: a usage example, no results; docs/source/index.rst: no results;
# OpenFGL-Appendix.pdf: settings and heterogeneous-graph results only, no Cora table); the stored
# pages of arXiv 2408.16288v2 (only the abstract is readable there, not the result tables); the
# docs and code corpora (OpenFGL's own README copies and scripts of others, no reported table).
OPENFGL: dict[tuple[str, str, str, int], tuple[str, str]] = {}

# What OpenFGL's appendix (OpenFGL-Appendix.pdf in github:xkLi-Allen/OpenFGL, A.5 and A.7) says of
# its Subgraph-FL setting, for the footnote: read there, not recalled.
OPENFGL_SETTING = (
    "OpenFGL's Subgraph-FL setting (its appendix, OpenFGL-Appendix.pdf in github:xkLi-Allen/OpenFGL, A.7): "
    "GCN, 100 rounds, 3 local epochs, learning rate 1e-2, weight decay 5e-4, dropout 0.5, Adam, three runs "
    "without fixed seeds, 10-client Metis partitions by default; A.5: the default evaluation is each "
    "client's local model on its local data (our client-model column)."
)


class Status(enum.Enum):
    """Whether a run took place, or the setting is outside the algorithm's preconditions."""

    RAN = "ran"
    NOT_APPLICABLE = "n/a"


@dataclass
class AlgorithmRun:
    """One (algorithm, dataset, partitioner, seed): the app's summary figures, or why it did not run."""

    algorithm: str
    dataset: str
    partitioner: str
    seed: int
    status: str = Status.RAN.value
    reason: str = ""
    wall_seconds: float | None = None
    best_round: int | None = None
    best: dict[str, float | None] = field(default_factory=dict)
    final: dict[str, float | None] = field(default_factory=dict)
    setting: dict[str, Any] = field(default_factory=dict)
    clients: int | None = None  # the run's clients (one for the centralised reference)


# The run-config keys each run records, for the footnote's comparison of settings.
SETTING_KEYS = task_tables.SETTING_KEYS[NODE_CLASSIFICATION]


# The summary figures a run keeps: (summary key, column label).
FIGURES = task_tables.ACCURACIES


# The datasets and partitioners benched when none are given: a graph cut into subgraphs, or, for a task
# whose clients hold graph sets, every graph set and every partitioner of graph sets.
DATASETS, PARTITIONERS = "cora,csbm", "louvain,label-dirichlet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--task",
        default=NODE_CLASSIFICATION,
        choices=available(),
        help="what the clients learn (stamen/contract/tasks.py); the table shows its own figures",
    )
    parser.add_argument(
        "--datasets", help=f"comma-separated datasets (default: {DATASETS}; {', '.join(GRAPH_SETS)} for graph sets)"
    )
    parser.add_argument(
        "--partitioners",
        help=f"comma-separated partitioners (default: {PARTITIONERS}; {','.join(graph_set_partitioners())} for graph "
        "sets)",
    )
    parser.add_argument(
        "--algorithms",
        default="all",
        help=f"comma-separated, or all (default: those the task admits) of: {', '.join(ALGORITHMS)}",
    )
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--data-root", default="", help="folder holding the datasets' files (<root>/Cora/raw)")
    parser.add_argument("--csbm-nodes", type=int, default=3000)
    parser.add_argument(
        "--centralised",
        action="store_true",
        help=f"also a reference row per dataset and partitioner, {centralised.LABEL}: the same model and settings "
        "trained by the same engine over one client holding all the data (FedAvg, one client)",
    )
    add_run_options(parser)


def names(text: str, what: str) -> list[str]:
    """``"a,b"`` as ``["a", "b"]`` (no repeats); ValueError naming ``what`` if empty."""
    values = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not values:
        raise ValueError(f"{what} names nothing, got {text!r}")
    return values


def datasets(args: argparse.Namespace) -> list[str]:
    """``--datasets``, or the task's default ones."""
    default = ",".join(GRAPH_SETS) if TASKS[args.task].graph_sets else DATASETS
    return names(args.datasets or default, "--datasets")


def partitioners(args: argparse.Namespace) -> list[str]:
    """``--partitioners``, or the task's default ones."""
    default = ",".join(graph_set_partitioners()) if TASKS[args.task].graph_sets else PARTITIONERS
    return names(args.partitioners or default, "--partitioners")


def chosen_algorithms(text: str, task: str = NODE_CLASSIFICATION) -> list[str]:
    """``--algorithms``: ``all`` (those ``task`` admits, in the registry's order) or names of the registry;
    ValueError naming the choices. A named algorithm the task does not admit is listed n/a with the reason."""
    if text.strip() == "all":
        return list(TASKS[task].algorithms)
    chosen = names(text, "--algorithms")
    unknown = [name for name in chosen if name not in ALGORITHMS]
    if unknown:
        raise ValueError(
            f"unknown algorithm(s) {', '.join(unknown)} for bench algorithms; choose all or from: "
            f"{', '.join(ALGORITHMS)}"
        )
    return chosen


def run_values(args: argparse.Namespace, algorithm: str, dataset: str, partitioner: str, seed: int) -> dict[str, Any]:
    """The run config of one run, as Flower's mapping (the defaults fill the rest)."""
    values: dict[str, Any] = {
        "dataset": dataset,
        "data-root": str(Path(args.data_root).resolve()) if args.data_root else "",
        "partitioner": partitioner,
        "num-server-rounds": args.rounds,
        "seed": seed,
        "min-clients": min(2, args.clients),
    }
    if dataset == "csbm":
        values["csbm-nodes"] = args.csbm_nodes
    values.update(parse_overrides(args.set, "--run-config"))  # as stamen run -c: a bad value is one line
    if values.get("task", args.task) != args.task:
        raise ValueError(f"bench algorithms takes the task from --task, not -c task={values['task']!r}; give --task")
    values["algorithm"] = algorithm
    if args.task != NODE_CLASSIFICATION:
        values["task"] = args.task
    return values


def row_names(args: argparse.Namespace) -> list[str]:
    """The table's rows in order: the chosen algorithms, then (``--centralised``) the centralised reference."""
    return chosen_algorithms(args.algorithms, args.task) + ([centralised.LABEL] if args.centralised else [])


def unit(args: argparse.Namespace, name: str, dataset: str, partitioner: str, seed: int) -> tuple[dict[str, Any], int]:
    """Row ``name``'s run of a setting: its run config (Flower's mapping) and its number of clients."""
    if name == centralised.LABEL:
        federated = run_values(args, centralised.ALGORITHM, dataset, partitioner, seed)
        return centralised.run_values(federated), centralised.CLIENTS
    return run_values(args, name, dataset, partitioner, seed), args.clients


def plan(args: argparse.Namespace) -> tuple[list[tuple[str, str, str, int]], list[AlgorithmRun]]:
    """The runs to make, and the settings each algorithm's preconditions exclude (checked now, before any run).

    A setting that fails for the reference algorithm (FedAvg) too is bad input: ValueError.
    """
    algorithms = row_names(args)
    seeds = parse_seeds(args.seeds)
    if args.jobs < 1 or args.clients < 1 or args.rounds < 1:
        raise ValueError(
            f"--jobs, --clients and --rounds must be at least 1, got {args.jobs}, {args.clients}, {args.rounds}"
        )
    for dataset in datasets(args):
        for partitioner in partitioners(args):
            reference = RunConfig.from_flower(run_values(args, "fedavg", dataset, partitioner, seeds[0]))
            check_with_data(reference, args.clients)  # the dataset, its files and the partitioner
    tasks, excluded = [], []
    for dataset in datasets(args):
        for partitioner in partitioners(args):
            for seed in seeds:
                for algorithm in algorithms:
                    try:
                        values, clients = unit(args, algorithm, dataset, partitioner, seed)
                        check_with_data(RunConfig.from_flower(values), clients)
                    except ValueError as error:
                        excluded.append(
                            AlgorithmRun(algorithm, dataset, partitioner, seed, Status.NOT_APPLICABLE.value, str(error))
                        )
                        continue
                    tasks.append((algorithm, dataset, partitioner, seed))
    return tasks, excluded


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """Every run of the plan; a unit is one (algorithm, dataset, partitioner, seed) run."""
    tasks, excluded = plan(args)
    results: list[dict[str, Any]] = [asdict(entry) for entry in excluded]
    for algorithm, reason in dict.fromkeys((entry.algorithm, entry.reason) for entry in excluded):
        units.screen.note(f"{algorithm}: n/a: {reason}")
    keys = ["/".join(map(str, task)) for task in tasks]
    units.begin(keys)
    results += [units.kept(key) for key in keys if key in units]

    def report(entry: AlgorithmRun) -> None:
        key = "/".join(map(str, (entry.algorithm, entry.dataset, entry.partitioner, entry.seed)))
        line = f"{_label(entry)}: {entry.wall_seconds:.0f} s, best round {entry.best_round}, {_short(entry)}"
        results.append(units.finish(key, asdict(entry), line))

    work = [(*unit(args, *task), task[0]) for task, key in zip(tasks, keys) if key not in units]
    if args.jobs == 1:
        for values, clients, name in work:
            report(one_run(values, clients, name))
    else:
        run_in_processes(one_run, work, args.jobs, report)
    order = {key: index for index, key in enumerate(_order(args))}
    results.sort(key=lambda r: order[(r["dataset"], r["partitioner"], r["algorithm"], r["seed"])])
    return results


def _order(args: argparse.Namespace) -> list[tuple[str, str, str, int]]:
    return [
        (dataset, partitioner, algorithm, seed)
        for dataset in datasets(args)
        for partitioner in partitioners(args)
        for algorithm in row_names(args)
        for seed in parse_seeds(args.seeds)
    ]


def one_run(values: dict[str, Any], num_clients: int, name: str = "") -> AlgorithmRun:
    """One federated run in process, named ``name`` in the table (default: its algorithm); its figures are the
    app's summary of its rows."""
    # on use: flwr, numpy stay out of this module's import
    from stamen.server.outputs import summarize
    from stamen.simulations.inprocess import flower_log_level, run_in_process

    config = RunConfig.from_flower(values)
    entry = AlgorithmRun(name or config.algorithm, config.dataset, config.partitioner, config.seed)
    entry.clients = num_clients
    print(f"[bench algorithms] {_label(entry)} ...", flush=True)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with flower_log_level(logging.WARNING):  # Flower's per-round INFO lines would drown the progress
        run_in_process(config, num_clients, rows.append)
    wall = time.perf_counter() - started
    summary = summarize(rows, wall, config)
    entry.wall_seconds = wall
    entry.best_round = summary["best_round"]
    entry.best, entry.final = task_tables.kept(config.task, summary, rows)
    entry.setting = {key: config.to_flower()[key] for key in task_tables.SETTING_KEYS[config.task]}
    return entry


def _label(entry: AlgorithmRun) -> str:
    return f"{entry.algorithm}, {entry.dataset}, {entry.partitioner}, seed {entry.seed}"


def _short(entry: AlgorithmRun) -> str:
    figures = FIGURES if GLOBAL_TEST_ACC in entry.best else ((GLOBAL_TEST_AUC, "global"), (TEST_AUC, "clients"))
    shown = [f"{label} {entry.best[key]:.3f}" for key, label in figures if entry.best.get(key) is not None]
    what = "acc" if GLOBAL_TEST_ACC in entry.best else "AUC"
    return f"test {what} at best round: " + (", ".join(shown) or "-")


def openfgl(algorithm: str, dataset: str, partitioner: str, clients: int) -> str:
    """OpenFGL's figure for the setting, with its footnote mark, or ``-``."""
    found = OPENFGL.get((algorithm, dataset, partitioner, clients))
    return f"{found[0]} [1]" if found else "-"


def beside_openfgl(task: str, dataset: str, partitioner: str, clients: int) -> bool:
    """Whether a table of the setting has an OpenFGL column: only where OpenFGL reports a figure for it."""
    return task == NODE_CLASSIFICATION and any(key[1:] == (dataset, partitioner, clients) for key in OPENFGL)


def summarize(
    results: list[dict[str, Any]], dataset: str, partitioner: str, clients: int, task: str = NODE_CLASSIFICATION
) -> list[list[str]]:
    """Rows = algorithms of the setting: each figure's mean ± std over seeds, wall seconds (node classification:
    and OpenFGL's figure)."""
    entries = [r for r in results if r["dataset"] == dataset and r["partitioner"] == partitioner]
    table = []
    shown = beside_openfgl(task, dataset, partitioner, clients)
    for algorithm in dict.fromkeys(r["algorithm"] for r in entries):
        beside = [openfgl(algorithm, dataset, partitioner, clients)] if shown else []
        runs = [r for r in entries if r["algorithm"] == algorithm]
        ran = [r for r in runs if r["status"] == Status.RAN.value]
        if not ran:
            reasons = "; ".join(dict.fromkeys(r["reason"] for r in runs))
            cells = [f"n/a: {reasons}", *(["n/a"] * (len(task_tables.figure_columns(task)) - 1))]
            table.append([algorithm, *cells, "-", *beside])
            continue
        missing = [r for r in runs if r["status"] != Status.RAN.value]
        note = "; ".join(dict.fromkeys(f"seed {r['seed']} n/a: {r['reason']}" for r in missing))
        model, cells = task_tables.cells(task, ran)
        row = [algorithm + model + (f" ({note})" if note else ""), *cells]
        table.append([*row, f"{mean(r['wall_seconds'] for r in ran):.1f}", *beside])
    return table


def columns(task: str = NODE_CLASSIFICATION, hits_k: Any = "K", openfgl_column: bool = False) -> list[str]:
    beside = ["OpenFGL"] if openfgl_column else []
    return ["algorithm", *task_tables.figure_columns(task, hits_k), "wall s / run", *beside]


def settings(results: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((r["dataset"], r["partitioner"]) for r in results))


def _task(record: dict[str, Any]) -> str:
    """The record's task (node classification: a record of an earlier version, which had none)."""
    return record["setting"].get("task") or NODE_CLASSIFICATION


def _hits_k(results: list[dict[str, Any]]) -> Any:
    found = sorted({str(r["setting"]["hits-k"]) for r in results if "hits-k" in r.get("setting", {})})
    return "/".join(found) or "K"


def markdown(record: dict[str, Any]) -> list[str]:
    results, setting, task = record["results"], record["setting"], _task(record)
    seeds = sorted({r["seed"] for r in results})
    if task == NODE_CLASSIFICATION:
        caption = (
            f"Test accuracy (%), mean ± std over seeds {seeds}, {setting.get('clients')} clients, "
            f"{setting.get('rounds')} rounds, in process; each figure is the run's own summary: at the round of best "
            "validation accuracy (the global model's where the algorithm keeps one, else the client models') and at "
            "the final round. Global model: the weights every client received (- where the algorithm keeps none); "
            "client models: every client's model after its local training, pooled over the clients' test nodes "
            f"(the personalised figure). {task_tables.HEADLINE_NOTE}"
        )
    else:
        caption = task_tables.caption(task, seeds, setting)
    lines = [caption + _centralised_note(results) + _overlap_note(setting.get("jobs", 1))]
    for dataset, partitioner in settings(results):
        lines += ["", f"### {dataset}, {partitioner}", ""]
        clients = setting.get("clients", 0)
        rows = summarize(results, dataset, partitioner, clients, task)
        beside = beside_openfgl(task, dataset, partitioner, clients)
        lines += markdown_table(columns(task, _hits_k(results), beside), rows)
    lines += ["", _footnote(results, task)]
    return lines


def _ours(results: list[dict[str, Any]], task: str = NODE_CLASSIFICATION) -> str:
    """The settings our runs used (each key's values over the runs), from the record."""
    ran = [r for r in results if r["status"] == Status.RAN.value]
    values = {key: sorted({str(r["setting"].get(key)) for r in ran}) for key in task_tables.SETTING_KEYS[task]}
    return ", ".join(f"{key} {'/'.join(found)}" for key, found in values.items() if found)


def _footnote(results: list[dict[str, Any]], task: str = NODE_CLASSIFICATION) -> str:
    if task != NODE_CLASSIFICATION:
        return f"Settings: {_ours(results, task) or '-'} (`stamen config` describes the keys)."
    ours = f"Settings: {_ours(results) or '-'} (`stamen config` describes the keys)."
    sources = sorted({source for _, source in OPENFGL.values()})
    if not sources:
        return f"{ours} For comparison, {OPENFGL_SETTING}"
    return (
        f'{ours} [1] OpenFGL (Li et al., "OpenFGL: A Comprehensive Benchmark for Federated Graph Learning", PVLDB; '
        f"arXiv 2408.16288, 2024); figures from: {'; '.join(sources)}. {OPENFGL_SETTING}"
    )


def _centralised_note(results: list[dict[str, Any]]) -> str:
    """The sentence on the centralised reference, where the record has its row."""
    found = [r["dataset"] for r in results if r["algorithm"] == centralised.LABEL]
    return centralised.note(list(dict.fromkeys(found))) if found else ""


def _overlap_note(jobs: int) -> str:
    if jobs == 1:
        return ""
    return f" {jobs} runs at once, one per process: each wall time includes sharing the machine with the others."


def print_table(record: dict[str, Any]) -> None:
    results, clients, task = record["results"], record["setting"].get("clients", 0), _task(record)
    what = "link figures" if task == LINK_PREDICTION else "test accuracy %"
    print_tables(
        [
            (
                f"stamen bench {record['name']}: {task + ', ' if task != NODE_CLASSIFICATION else ''}{dataset}, "
                f"{partitioner}, {what} (mean ± std over seeds)",
                columns(task, _hits_k(results), beside_openfgl(task, dataset, partitioner, clients)),
                summarize(results, dataset, partitioner, clients, task),
            )
            for dataset, partitioner in settings(results)
        ]
    )
