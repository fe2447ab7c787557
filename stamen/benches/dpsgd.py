"""``stamen bench dpsgd``: what DP-SGD costs over the same minibatches without it.

For each decoupled model (``--models``), every client of the federation trains one
round of ``--local-epochs`` epochs from the same initial model, three ways, on the
same Poisson batches (drawn from the same seeded generator, ``int(1/q)`` steps an
epoch, empty batches counted as steps):

- no DP: mean cross-entropy, Adam, nothing else;
- DP-SGD as Stamen trains it (:func:`stamen.client.privacy.train_private`, per-sample
  gradients in closed form, :mod:`stamen.models.dp_sgd`);
- DP-SGD through Opacus (:mod:`stamen.models.dp_sgd_opacus`), the reference.

Each variant's time is the sum over clients of one round (propagation, batches,
steps, and for DP the accountant's epsilon), the fastest of ``--repeats`` rounds,
the variants interleaved. The ratio is DP over no DP. Both DP variants must spend the
same epsilon; the record keeps both. Stamen computes the accountant's per-step RDP curve
once per ``(sigma, q)`` and process (:func:`stamen.client.privacy.rdp_per_step`), so the fastest
repeat is a steady round; ``--repeats 1`` shows a fresh process's first round, which
pays it once (Opacus pays it in every round).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from flwr.app import RecordDict
from torch_geometric.data import Data

from stamen.benches.records import markdown_table, print_tables
from stamen.client.job import client_data
from stamen.client.privacy import RowClassifier, load_accountant, propagated_rows, sample_rate, train_private
from stamen.common.options import finite_float
from stamen.contract.run_config import RunConfig
from stamen.experiments.long_job import LongJob
from stamen.models import build_model
from stamen.models.dp_sgd import poisson_epoch
from stamen.models.dp_sgd_opacus import OpacusRound, opacus_round
from stamen.models.names import DECOUPLED_MODELS

NAME = "dpsgd"
HELP = "DP-SGD against the same Poisson batches without DP, per decoupled model (Stamen's and Opacus's)"
VARIANTS = ("no_dp", "dp_sgd", "opacus")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="cora")
    parser.add_argument("--data-root", default="")
    parser.add_argument("--csbm-nodes", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--models", default=",".join(DECOUPLED_MODELS), help="comma-separated decoupled models")
    parser.add_argument("--num-layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--dropout", type=finite_float, default=0.5)
    parser.add_argument("--local-epochs", type=int, default=5, help="epochs of the timed round")
    parser.add_argument("--dp-batch-size", type=int, default=32)
    parser.add_argument("--max-grad-norm", type=finite_float, default=1.0)
    parser.add_argument("--noise-multiplier", type=finite_float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3, help="rounds timed per variant; the fastest counts")
    parser.add_argument("--seed", type=int, default=0)


def _config(args: argparse.Namespace, model: str) -> RunConfig:
    return RunConfig.from_flower(
        {
            "dataset": args.dataset,
            "data-root": str(Path(args.data_root).resolve()) if args.data_root else "",
            "csbm-nodes": args.csbm_nodes,
            "model": model,
            "num-layers": args.num_layers,
            "hidden": args.hidden,
            "dropout": args.dropout,
            "local-epochs": args.local_epochs,
            "seed": args.seed,
            "min-clients": args.clients,
            "privacy": "dp-sgd",
            "dp-batch-size": args.dp_batch_size,
            "max-grad-norm": args.max_grad_norm,
            "noise-multiplier": args.noise_multiplier,
        }
    )


def _models(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in DECOUPLED_MODELS]
    if not names or unknown:
        raise ValueError(f"--models takes decoupled models ({', '.join(DECOUPLED_MODELS)}), got {text!r}")
    return names


Round = Callable[[torch.nn.Module, torch.optim.Optimizer, Data, torch.Generator], tuple[int, float | None]]


def _no_dp(config: RunConfig) -> Round:
    def train(model: Any, optimizer: Any, data: Data, generator: torch.Generator) -> tuple[int, float | None]:
        rows = propagated_rows(model, data)[data.train_mask]
        labels = data.y[data.train_mask]
        rate, module, steps = sample_rate(len(labels), config.dp_batch_size), RowClassifier(model).train(), 0
        for _ in range(config.local_epochs):
            for index in poisson_epoch(len(labels), rate, generator):
                steps += 1
                if len(index) > 0:  # nothing to learn from an empty batch
                    optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(module(rows[index]), labels[index]).backward()
                    optimizer.step()
        return steps, None

    return train


def _dp_sgd(config: RunConfig) -> Round:
    def train(model: Any, optimizer: Any, data: Data, generator: torch.Generator) -> tuple[int, float | None]:
        result = train_private(model, data, config, optimizer, load_accountant(RecordDict()), generator)
        return result.steps, result.epsilon

    return train


def opacus_on_rows(
    model: Any, optimizer: Any, data: Data, config: RunConfig, generator: torch.Generator, accountant: Any
) -> OpacusRound:
    """Opacus's DP-SGD over the same propagated training rows and settings as the client's closed form
    (:func:`stamen.client.privacy.train_private`): the reference it is timed and tested against."""
    return opacus_round(
        RowClassifier(model),
        optimizer,
        propagated_rows(model, data)[data.train_mask],
        data.y[data.train_mask],
        config.noise_multiplier,
        config.max_grad_norm,
        config.dp_batch_size,
        config.local_epochs,
        generator,
        accountant,
    )


def _opacus(config: RunConfig) -> Round:
    def train(model: Any, optimizer: Any, data: Data, generator: torch.Generator) -> tuple[int, float | None]:
        accountant = load_accountant(RecordDict())
        done = opacus_on_rows(model, optimizer, data, config, generator, accountant)
        return done.steps, accountant.get_epsilon(config.target_delta)

    return train


def _timed_round(config: RunConfig, clients: list[Data], train: Round) -> dict[str, Any]:
    """One round of every client; seconds, steps and the largest epsilon."""
    seconds, steps, epsilons = 0.0, 0, []
    for partition, data in enumerate(clients):
        torch.manual_seed(config.seed)
        model = build_model(
            config.model,
            data.num_features,
            int(data.num_classes),
            hidden=config.hidden,
            num_layers=config.num_layers,
            dropout=config.dropout,
        )
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        generator = torch.Generator().manual_seed(config.seed * 1_009 + partition)
        torch.manual_seed(config.seed + partition)  # dropout and noise
        started = time.perf_counter()
        taken, epsilon = train(model, optimizer, data, generator)
        seconds += time.perf_counter() - started
        steps += taken
        if epsilon is not None:
            epsilons.append(epsilon)
    return {"seconds": seconds, "steps": steps, "epsilon": max(epsilons) if epsilons else None}


def model_cost(args: argparse.Namespace, model: str) -> dict[str, Any]:
    config = _config(args, model)
    spec = config.federation(args.clients)
    clients = [client_data(spec, i, torch.device("cpu")) for i in range(args.clients)]
    trainers = {"no_dp": _no_dp(config), "dp_sgd": _dp_sgd(config), "opacus": _opacus(config)}
    best: dict[str, dict[str, Any]] = {}
    for _ in range(args.repeats):
        for variant in VARIANTS:
            timed = _timed_round(config, clients, trainers[variant])
            if variant not in best or timed["seconds"] < best[variant]["seconds"]:
                best[variant] = timed
    if len({best[v]["steps"] for v in VARIANTS}) != 1:
        raise RuntimeError(f"the variants took different numbers of steps: {best}")
    return {
        "model": model,
        "training_nodes": sum(int(data.train_mask.sum()) for data in clients),
        "steps": best["no_dp"]["steps"],
        **{f"{v}_seconds": best[v]["seconds"] for v in VARIANTS},
        "ratio_dp_sgd": best["dp_sgd"]["seconds"] / best["no_dp"]["seconds"],
        "ratio_opacus": best["opacus"]["seconds"] / best["no_dp"]["seconds"],
        "epsilon_dp_sgd": best["dp_sgd"]["epsilon"],
        "epsilon_opacus": best["opacus"]["epsilon"],
    }


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """One :func:`model_cost` per model; a unit is one model."""
    models = _models(args.models)
    if args.repeats < 1 or args.clients < 1 or args.local_epochs < 1:
        raise ValueError("--repeats, --clients and --local-epochs must be at least 1")
    units.begin(models)
    return [units.run(model, model_cost, args, model, line=_line) for model in models]


def _line(entry: dict[str, Any]) -> str:
    return (
        f"{entry['model']}: DP-SGD {entry['ratio_dp_sgd']:.2f}x, Opacus {entry['ratio_opacus']:.2f}x the time "
        f"without DP over {entry['steps']} steps"
    )


COLUMNS = [
    "model",
    "training nodes",
    "steps",
    "no DP s",
    "DP-SGD s",
    "DP-SGD / no DP",
    "Opacus s",
    "Opacus / no DP",
    "epsilon (DP-SGD, Opacus)",
]


def rows(record: dict[str, Any]) -> list[list[str]]:
    return [
        [
            entry["model"],
            str(entry["training_nodes"]),
            str(entry["steps"]),
            f"{entry['no_dp_seconds']:.3f}",
            f"{entry['dp_sgd_seconds']:.3f}",
            f"{entry['ratio_dp_sgd']:.2f}x",
            f"{entry['opacus_seconds']:.3f}",
            f"{entry['ratio_opacus']:.2f}x",
            f"{entry['epsilon_dp_sgd']:.4f}, {entry['epsilon_opacus']:.4f}",
        ]
        for entry in record["results"]
    ]


def markdown(record: dict[str, Any]) -> list[str]:
    return markdown_table(COLUMNS, rows(record))


def print_table(record: dict[str, Any]) -> None:
    print_tables([(f"stamen bench {record['name']}: seconds per round, all clients", COLUMNS, rows(record))])
