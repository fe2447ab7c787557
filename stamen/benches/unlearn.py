"""``stamen bench unlearn``: forgetting a class, a client and some nodes, against retraining.

For each request, :func:`stamen.experiments.unlearn_experiment.run_request` trains the original model
per seed (the app's round loop and ClientApp in-process, shared by every request), retrains from
scratch without the
forgotten data, runs every method and evaluates them all. The record holds each
request's mean figures and the targets against retraining, with how far a missed target falls short.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from stamen.benches.records import markdown_table
from stamen.common.screen import output_console
from stamen.contract.run_config import RunConfig
from stamen.experiments.long_job import LongJob
from stamen.unlearn.report import method_lines, mia_gap_line, rich_table, target_lines, targets_table, title

NAME = "unlearn"
HELP = "unlearning requests (class, client, nodes) against retraining"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="cora")
    parser.add_argument("--data-root", default="")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--partitioner", default="louvain")
    parser.add_argument("--model", default="gcn")
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--local-epochs", type=int, default=1)
    parser.add_argument("--csbm-nodes", type=int, default=3000)
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated model seeds")
    parser.add_argument("--requests", default="class:2,client:0,nodes:0:0.5", help="comma-separated requests")
    parser.add_argument("--methods", default="all", help="all or a comma list of unlearning methods")


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """One :func:`~stamen.experiments.unlearn_experiment.run_request` per request (a unit); the original models (and
    their recorded updates) shared across the requests one command runs (trained again after a resume:
    the same seeds give the same originals)."""
    # on use: torch, torch_geometric, flwr, scipy, numpy stay out of this module's import
    from stamen.experiments.unlearn_experiment import parse_methods, parse_seeds, run_request

    config = RunConfig.from_flower(
        {
            "dataset": args.dataset,
            "data-root": str(Path(args.data_root).resolve()) if args.data_root else "",
            "partitioner": args.partitioner,
            "model": args.model,
            "num-server-rounds": args.rounds,
            "local-epochs": args.local_epochs,
            "csbm-nodes": args.csbm_nodes,
        }
    )
    methods, seeds = parse_methods(args.methods), parse_seeds(args.seeds)
    requests = list(dict.fromkeys(r.strip() for r in args.requests.split(",") if r.strip()))
    if not requests:
        raise ValueError(f"--requests must name at least one request, got {args.requests!r}")
    units.begin(requests)
    originals: dict = {}
    histories: dict = {}

    def one_request(request: str) -> dict[str, Any]:
        def progress(message: str) -> None:
            print(f"[bench unlearn] {request}: {message}", flush=True)

        result = run_request(
            config, args.clients, request, methods, seeds, originals=originals, progress=progress, histories=histories
        )
        result.pop("per_seed")  # the record keeps the means, spreads and targets
        return result

    return [units.run(request, one_request, request, line=lambda _, r=request: f"{r}: done") for request in requests]


def markdown(record: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for result in record["results"]:
        lines += [f"### {result['request']}", "", title(result) + ".", ""]
        lines += method_lines(result) + ["", mia_gap_line(result), ""] + target_lines(result) + [""]
    missed = [
        [
            r["request"],
            c["method"],
            c["target"],
            f"{c['value']:.3f}",
            c["threshold"].replace("|", "\\|"),
            f"{c['missed_by']:.3f}",
        ]
        for r in record["results"]
        for c in r["targets"]
        if c["met"] is False
    ]
    if missed:
        lines += ["Missed targets:", ""]
        lines += markdown_table(["request", "method", "target", "value", "threshold", "missed by"], missed)
    return lines


def print_table(record: dict[str, Any]) -> None:
    console = output_console()
    for result in record["results"]:
        console.print(rich_table(result))
        console.print(mia_gap_line(result), highlight=False)
        console.print(targets_table(result))
