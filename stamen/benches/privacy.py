"""``stamen bench privacy``: the privacy/utility trade-off and the cost of DP-SGD.

Every federated run drives the real round loop (:func:`stamen.server.loop.run_rounds`),
the real server setup (:func:`stamen.server.privacy.private_setup`, Flower's DP wrappers)
and the real ClientApp with its mods, through :class:`stamen.simulations.inprocess.InProcessGrid`:
the clients run one after the other in this process instead of in Flower's
simulation engine, which a 2-core machine cannot afford for dozens of runs.

- DP-SGD: an SGC-style model (``model=sgc``) whose noise multiplier is solved per
  client so that its epsilon after the whole run is each ``--epsilons`` value, and no DP.
- Client-level DP: the same, with Flower's DP wrapper (``--clipping``) and the noise
  multiplier solved at the client sampling rate.
- Cost: seconds per local epoch of one client, DP-SGD against non-private training
  of the same model on the same rows and batches, and the usual full-batch epoch.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

import torch
from flwr.app import RecordDict

from stamen.benches.records import final_acc, markdown_table, print_tables
from stamen.client.job import client_data
from stamen.client.privacy import RowClassifier, load_accountant, noise_multiplier, propagated_rows, train_private
from stamen.common.options import finite_float
from stamen.contract.figures import FINAL_TEST_ACC, GLOBAL_TEST_ACC, GLOBAL_VAL_ACC, TEST_ACC_AT_BEST_VAL
from stamen.contract.run_config import RunConfig
from stamen.experiments.long_job import LongJob
from stamen.models import build_model
from stamen.models.training import fit
from stamen.server.driver import build_driver
from stamen.simulations.inprocess import InProcessGrid, task_identity

NAME = "privacy"
HELP = "accuracy at epsilon 1, 2, 4, 8 and no DP (DP-SGD and client-level DP); DP-SGD seconds per epoch"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="cora")
    parser.add_argument("--data-root", default="")
    parser.add_argument("--csbm-nodes", type=int, default=3000)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--local-epochs", type=int, default=2)
    parser.add_argument("--lr", type=finite_float, default=0.05)
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--epsilons", default="1,2,4,8", help="target epsilons; no DP is always added")
    parser.add_argument("--dp-batch-size", type=int, default=32)
    parser.add_argument("--max-grad-norm", type=finite_float, default=1.0)
    parser.add_argument("--clipping", default="server-fixed", help="client-level DP wrapper")
    parser.add_argument("--clipping-norm", type=finite_float, default=0.5)
    parser.add_argument("--timing-epochs", type=int, default=20, help="epochs timed per variant")
    parser.add_argument("--skip-client-dp", action="store_true")


def _config(args: argparse.Namespace, seed: int, **privacy: Any) -> RunConfig:
    return RunConfig.from_flower(
        {
            "dataset": args.dataset,
            "data-root": str(Path(args.data_root).resolve()) if args.data_root else "",
            "csbm-nodes": args.csbm_nodes,
            "model": "sgc",
            "num-layers": 2,
            "dropout": 0.0,
            "num-server-rounds": args.rounds,
            "local-epochs": args.local_epochs,
            "lr": args.lr,
            "seed": seed,
            "min-clients": args.clients,
            "dp-batch-size": args.dp_batch_size,
            "max-grad-norm": args.max_grad_norm,
            "clipping": args.clipping,
            "clipping-norm": args.clipping_norm,
            **privacy,
        }
    )


def federated_run(config: RunConfig, num_clients: int) -> dict[str, Any]:
    """One run through the round loop and the ClientApp; its final figures."""
    rows: list[dict[str, Any]] = []
    with task_identity():
        setup = build_driver(config, InProcessGrid(config, num_clients), clients=num_clients)
        setup.run(rows.append)
    final = rows[-1]
    epsilon = final.get("epsilon_max")
    if setup.epsilon_after is not None:
        epsilon = setup.epsilon_after(final["round"])
    best = max((r for r in rows if GLOBAL_VAL_ACC in r), key=lambda r: r[GLOBAL_VAL_ACC])
    return {
        FINAL_TEST_ACC: final[GLOBAL_TEST_ACC],
        TEST_ACC_AT_BEST_VAL: best[GLOBAL_TEST_ACC],
        "epsilon": epsilon,
        "noise_multipliers": _noise_multipliers(config, num_clients, setup),
        "client_epsilons": final.get("epsilon"),
    }


def _noise_multipliers(config: RunConfig, num_clients: int, setup: Any) -> list[float]:
    """The noise multiplier of each client (DP-SGD) or of the server's wrapper (client-level DP)."""
    if config.privacy == "client-dp":
        return [setup.strategy.noise_multiplier]
    if config.privacy != "dp-sgd":
        return []
    spec = config.federation(num_clients)
    return [
        noise_multiplier(config, int(client_data(spec, i, torch.device("cpu")).train_mask.sum()))
        for i in range(num_clients)
    ]


def _seeds(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise ValueError(f"--seeds must be comma-separated integers, got {text!r}") from error


def _targets(args: argparse.Namespace, with_baseline: bool) -> list[float]:
    """The target epsilons of a trade-off (0: no DP, first when ``with_baseline``)."""
    targets = [float(e) for e in args.epsilons.split(",") if e.strip()]
    return [0.0, *targets] if with_baseline else targets


def _timed_run(args: argparse.Namespace, seed: int, setting: dict[str, Any]) -> dict[str, Any]:
    """One unit: a federated run and its seconds."""
    started = time.perf_counter()
    run = federated_run(_config(args, seed, **setting), args.clients)
    run["seconds"] = time.perf_counter() - started
    return run


def _key(privacy: str, target: float, seed: int) -> str:
    return f"{privacy if target > 0 else 'none'}/{target:g}/{seed}"


def _trade_off(args: argparse.Namespace, privacy: str, with_baseline: bool, units: LongJob) -> list[dict[str, Any]]:
    """Runs at each target epsilon (and without DP when ``with_baseline``), over the seeds."""
    results = []
    for target in _targets(args, with_baseline):
        runs = []
        for seed in _seeds(args.seeds):
            setting = {"privacy": privacy, "target-epsilon": target} if target > 0 else {}
            label = f"{privacy} eps={target or 'none'} seed={seed}"
            runs.append(
                units.run(
                    _key(privacy, target, seed),
                    _timed_run,
                    args,
                    seed,
                    setting,
                    line=lambda r, label=label: f"{label}: test acc {final_acc(r):.3f}, epsilon {r['epsilon']}",
                )
            )
        accuracies = [final_acc(r) for r in runs]
        results.append(
            {
                "privacy": privacy if target > 0 else "none",
                "target_epsilon": target or None,
                "final_epsilon_max": max((r["epsilon"] for r in runs), default=None) if target > 0 else None,
                FINAL_TEST_ACC + "_mean": mean(accuracies),
                FINAL_TEST_ACC + "_std": pstdev(accuracies),
                "runs": runs,
            }
        )
    return results


def epoch_seconds(args: argparse.Namespace) -> dict[str, Any]:
    """Seconds per local epoch of client 0: DP-SGD, the same batches without DP, full batch."""
    config = _config(args, 0, privacy="dp-sgd", **{"noise-multiplier": 1.0})
    spec = config.federation(args.clients)
    data = client_data(spec, 0, torch.device("cpu"))

    def new_model() -> torch.nn.Module:
        return build_model("sgc", data.num_features, int(data.num_classes), num_layers=2, dropout=0.0)

    one_epoch = config.replace(local_epochs=args.timing_epochs)

    def timed(train: Any) -> float:
        model = new_model()
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        started = time.perf_counter()
        train(model, optimizer)
        return (time.perf_counter() - started) / args.timing_epochs

    def private(model: Any, optimizer: Any) -> None:
        generator = torch.Generator().manual_seed(0)
        train_private(model, data, one_epoch, optimizer, load_accountant(RecordDict()), generator)

    def same_batches(model: Any, optimizer: Any) -> None:
        rows = propagated_rows(model, data)[data.train_mask]
        labels = data.y[data.train_mask]
        module = RowClassifier(model).train()
        for _ in range(args.timing_epochs):
            for index in torch.randperm(len(labels)).split(config.dp_batch_size):
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(module(rows[index]), labels[index]).backward()
                optimizer.step()

    def full_batch(model: Any, optimizer: Any) -> None:
        fit(model, data, args.timing_epochs, optimizer)

    figures = {
        "dp_sgd": timed(private),
        "same_batches_no_dp": timed(same_batches),
        "full_batch_no_dp": timed(full_batch),
    }
    figures["training_nodes"] = int(data.train_mask.sum())
    figures["ratio_dp_to_same_batches"] = figures["dp_sgd"] / figures["same_batches_no_dp"]
    return figures


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """The cost of DP-SGD, then the trade-offs; a unit is the timing, or one federated run (setting x seed)."""
    seeds = _seeds(args.seeds)
    keys = ["epoch_seconds"] + [_key("dp-sgd", t, seed) for t in _targets(args, True) for seed in seeds]
    if not args.skip_client_dp:
        keys += [_key("client-dp", t, seed) for t in _targets(args, False) for seed in seeds]
    units.begin(keys)
    cost = units.run("epoch_seconds", epoch_seconds, args, line=lambda found: f"seconds per local epoch: {found}")
    results: list[dict[str, Any]] = [{"kind": "epoch_seconds", **cost}]
    results += [{"kind": "trade_off", **entry} for entry in _trade_off(args, "dp-sgd", True, units)]
    if not args.skip_client_dp:
        results += [{"kind": "trade_off", **entry} for entry in _trade_off(args, "client-dp", False, units)]
    return results


TRADE_OFF_COLUMNS = [
    "privacy",
    "target epsilon",
    "noise multiplier (mean)",
    "final epsilon (max over clients, seeds)",
    "test acc (mean ± std)",
]
COST_COLUMNS = ["training nodes", "DP-SGD s/epoch", "same batches, no DP s/epoch", "full batch, no DP s/epoch", "ratio"]


def _mean_noise(entry: dict[str, Any]) -> str:
    values = [z for run in entry["runs"] for z in run["noise_multipliers"]]
    return f"{mean(values):.3f}" if values else "-"


def trade_off_rows(record: dict[str, Any]) -> list[list[str]]:
    return [
        [
            entry["privacy"],
            "-" if entry["target_epsilon"] is None else f"{entry['target_epsilon']:g}",
            _mean_noise(entry),
            "-" if entry["final_epsilon_max"] is None else f"{entry['final_epsilon_max']:.3f}",
            f"{final_acc(entry, '_mean'):.3f} ± {final_acc(entry, '_std'):.3f} ({len(entry['runs'])} seeds)",
        ]
        for entry in record["results"]
        if entry["kind"] == "trade_off"
    ]


def cost_rows(record: dict[str, Any]) -> list[list[str]]:
    return [
        [
            str(entry["training_nodes"]),
            f"{entry['dp_sgd']:.4f}",
            f"{entry['same_batches_no_dp']:.4f}",
            f"{entry['full_batch_no_dp']:.4f}",
            f"{entry['ratio_dp_to_same_batches']:.2f}x",
        ]
        for entry in record["results"]
        if entry["kind"] == "epoch_seconds"
    ]


def markdown(record: dict[str, Any]) -> list[str]:
    return (
        markdown_table(TRADE_OFF_COLUMNS, trade_off_rows(record))
        + [""]
        + markdown_table(COST_COLUMNS, cost_rows(record))
    )


def print_table(record: dict[str, Any]) -> None:
    print_tables(
        [
            (f"stamen bench {record['name']}: privacy/utility", TRADE_OFF_COLUMNS, trade_off_rows(record)),
            (f"stamen bench {record['name']}: seconds per local epoch", COST_COLUMNS, cost_rows(record)),
        ]
    )
