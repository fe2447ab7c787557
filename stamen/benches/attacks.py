r"""``stamen bench attacks``: accuracy under each attack, FedAvg against the robust strategies.

Every run drives the real round loop (:func:`stamen.server.loop.run_rounds`), the algorithm's
server part and the real ClientApp (whose training handler lets the malicious clients
attack, :mod:`stamen.client.attacks`) through :class:`stamen.simulations.inprocess.InProcessGrid`.
For each attack (``none`` included) and each algorithm the table gives the final
global model's test accuracy, pooled over *all* clients (the malicious clients' test
nodes too, whose labels stay clean). The robust strategies are told
``num-malicious-nodes`` = the number of malicious clients; a strategy whose rule needs
more clients than the federation has (Krum: :math:`2f + 3`, Bulyan: :math:`4f + 3`) is
reported as skipped.

Label flipping is set beside its certificate: the exact label-flip certificate of
``stamen certify``'s federated attacker (Sabanayagam, Gosch et al., ICLR 2025; NTK of a
GCN with the run's ``num-layers`` + kernel SVM, sample-wise) on the same graph, the
labelled nodes drawn per class over the graph (a seed of their own, independent of
the partitioner's draws) and owned by the client of the same partition; the attacker
is the coalition of the malicious clients, which may flip
:math:`k = \lfloor \phi\, m \rfloor` of the :math:`m` labelled nodes it owns, the share
:math:`\phi` = ``attack-flip-fraction`` that the attack flipped of their training labels.
The certified ratio is the share of targets whose SVM prediction no such flip set can
change. It certifies a different learner (an NTK SVM on a binary sub-task, the two
largest classes) than the federated GCN: it is a reference point, not a bound on the
table's accuracy.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

import numpy as np

from stamen.benches.records import final_acc, markdown_table, print_tables
from stamen.certify.data import build_instance
from stamen.client.attacks import Attack, check_attack
from stamen.common.options import finite_float
from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.figures import FINAL_TEST_ACC, GLOBAL_TEST_ACC
from stamen.contract.run_config import RunConfig
from stamen.experiments.long_job import LongJob
from stamen.graphs import build_federation
from stamen.simulations.inprocess import run_in_process

NAME = "attacks"
HELP = "accuracy under label-flip, sign-flip and Gaussian attacks: FedAvg vs robust strategies; certificates"

ROBUST = ("fedmedian", "fedtrimmedavg", "krum", "multikrum", "bulyan")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="csbm")
    parser.add_argument("--data-root", default="")
    parser.add_argument("--csbm-nodes", type=int, default=1000)
    parser.add_argument("--csbm-classes", type=int, default=3)
    parser.add_argument("--partitioner", default="label-dirichlet")
    parser.add_argument("--dirichlet-alpha", type=finite_float, default=100.0, help="label skew (large: near IID)")
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--malicious", default="1", help="malicious-clients: a count or partition ids '0,3'")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--local-epochs", type=int, default=3)
    parser.add_argument("--algorithms", default=",".join(("fedavg", *ROBUST)))
    parser.add_argument("--attacks", default="none,label-flip,sign-flip,gaussian")
    parser.add_argument("--flip-fraction", type=finite_float, default=1.0, help="attack-flip-fraction")
    parser.add_argument("--scale", type=finite_float, default=10.0, help="attack-scale of sign-flip")
    parser.add_argument("--std", type=finite_float, default=1.0, help="attack-std of gaussian")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds")
    parser.add_argument("--labeled-per-class", type=int, default=10, help="certificate: labelled nodes per class")
    parser.add_argument("--targets", type=int, default=50, help="certificate: target nodes")
    parser.add_argument("--certify-c", type=finite_float, default=0.01, help="certificate: the SVM's C")
    parser.add_argument("--time-limit", type=finite_float, default=60.0, help="certificate: seconds per MILP")


def _seeds(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise ValueError(f"--seeds must be comma-separated integers, got {text!r}") from error


def _names(text: str, accepted: tuple[str, ...], flag: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in accepted]
    if not names or unknown:
        raise ValueError(f"{flag} takes a comma list of {', '.join(accepted)}; got {text!r}")
    return names


def _config(args: argparse.Namespace, algorithm: str, attack: str, seed: int, malicious: int) -> RunConfig:
    return RunConfig.from_flower(
        {
            "dataset": args.dataset,
            "data-root": str(Path(args.data_root).resolve()) if args.data_root else "",
            "csbm-nodes": args.csbm_nodes,
            "csbm-classes": args.csbm_classes,
            "partitioner": args.partitioner,
            "dirichlet-alpha": args.dirichlet_alpha,
            "num-server-rounds": args.rounds,
            "local-epochs": args.local_epochs,
            "min-clients": args.clients,
            "seed": seed,
            "algorithm": algorithm,
            "attack": attack,
            "malicious-clients": args.malicious if attack != Attack.NONE.value else "",
            "attack-flip-fraction": args.flip_fraction,
            "attack-scale": args.scale,
            "attack-std": args.std,
            "num-malicious-nodes": malicious,
        }
    )


def final_accuracy(config: RunConfig, num_clients: int) -> float:
    """One in-process run; the final global model's pooled test accuracy."""
    rows: list[dict[str, Any]] = []
    run_in_process(config, num_clients, rows.append)
    return float(rows[-1][GLOBAL_TEST_ACC])


def _skip_reason(algorithm: str, malicious: int, clients: int) -> str | None:
    spec = ALGORITHMS[algorithm]
    if spec.least_clients is not None and clients < spec.least_replies(malicious):
        factor, constant = spec.least_clients
        return f"needs {factor}f+{constant} = {spec.least_replies(malicious)} clients"
    return None


def label_flip_certificate(args: argparse.Namespace, config: RunConfig, malicious: frozenset[int]) -> dict[str, Any]:
    """The federated label-flip certificate against the coalition of the malicious clients."""
    # on use: pulp stays out of this module's import
    from stamen.certify.pipeline import run
    from stamen.certify.solvers import SolverSpec
    from stamen.certify.task import CertificationTask

    federation = build_federation(config.federation(args.clients))
    # a seed of its own: the partitioners draw from the run's seed too, and the same stream would deal the
    # labelled nodes to the same clients (label-dirichlet hands each class's first draws to client 0)
    draw = config.seed * 7_919 + 1
    instance = build_instance(
        federation.graph, None, True, args.labeled_per_class, args.targets, draw, drop_isolated=True
    )
    node_owner = np.full(int(federation.graph.num_nodes), -1, dtype=np.int64)
    for client, nodes in enumerate(federation.parts):
        node_owner[np.asarray(nodes)] = client
    coalition = np.isin(node_owner[instance.node_ids[instance.labeled]], sorted(malicious)).astype(np.int64)
    owned = int(coalition.sum())
    budget = math.floor(config.attack_flip_fraction * owned)
    figures: dict[str, Any] = {
        "malicious_clients": sorted(malicious),
        "labelled_owned": owned,
        "labelled": int(len(instance.labeled)),
        "targets": int(len(instance.targets)),
        "budget": budget,
        "certified_ratio": None,
        "svm_clean_accuracy": None,
    }
    if owned == 0:  # nothing the coalition could flip
        return figures
    task = CertificationTask(
        instance=instance,
        budgets=(budget,),
        C=args.certify_c,
        arch="gcn",
        depth=config.num_layers,
        solver=SolverSpec("highs", args.time_limit),
        owner=coalition,
        attacker=1,
        seed=config.seed,
    )
    report = run(task)
    figures["certified_ratio"] = report.aggregates()[budget].certified_ratio
    figures["svm_clean_accuracy"] = report.clean_accuracy
    return figures


def _seeded_run(args: argparse.Namespace, algorithm: str, attack: str, seed: int, malicious: int) -> dict[str, Any]:
    """One unit: the final accuracy of one (attack, algorithm, seed) run, and its seconds."""
    started = time.perf_counter()
    accuracy = final_accuracy(_config(args, algorithm, attack, seed, malicious), args.clients)
    return {FINAL_TEST_ACC: accuracy, "seconds": time.perf_counter() - started}


def _certificate(args: argparse.Namespace, seed: int, malicious: int) -> dict[str, Any]:
    """One unit: the label-flip certificate of one seed."""
    config = _config(args, "fedavg", Attack.LABEL_FLIP.value, seed, malicious)
    return label_flip_certificate(args, config, check_attack(config, args.clients))


def run(args: argparse.Namespace, units: LongJob) -> list[dict[str, Any]]:
    """Accuracy per attack and algorithm over the seeds, then the certificates.

    A unit is one (attack, algorithm, seed) run, or the label-flip certificate of one seed.
    """
    algorithms = _names(args.algorithms, tuple(ALGORITHMS), "--algorithms")
    attacks = _names(args.attacks, tuple(a.value for a in Attack), "--attacks")
    seeds = _seeds(args.seeds)
    probe = _config(args, "fedavg", Attack.SIGN_FLIP.value, seeds[0], 0)  # checks every key before any run
    malicious = len(check_attack(probe, args.clients))
    ran = [(a, b) for a in attacks for b in algorithms if _skip_reason(b, malicious, args.clients) is None]
    certified = Attack.LABEL_FLIP.value in attacks
    units.begin(
        [f"{a}/{b}/{seed}" for a, b in ran for seed in seeds] + [f"certificate/{seed}" for seed in seeds if certified]
    )
    results: list[dict[str, Any]] = []
    for attack in attacks:
        for algorithm in algorithms:
            entry: dict[str, Any] = {"kind": "accuracy", "attack": attack, "algorithm": algorithm}
            skip = _skip_reason(algorithm, malicious, args.clients)
            if skip is not None:
                results.append({**entry, "skipped": skip})
                continue
            runs = []
            for seed in seeds:
                label = f"{attack} / {algorithm}, seed {seed}"
                runs.append(
                    units.run(
                        f"{attack}/{algorithm}/{seed}",
                        _seeded_run,
                        *(args, algorithm, attack, seed, malicious),
                        line=lambda run, label=label: f"{label}: test acc {final_acc(run):.3f}",
                    )
                )
            accuracies = [final_acc(run) for run in runs]
            entry.update(
                {FINAL_TEST_ACC + "_mean": mean(accuracies), FINAL_TEST_ACC + "_std": pstdev(accuracies)},
                **{FINAL_TEST_ACC: accuracies},
            )
            entry["seconds"] = sum(run["seconds"] for run in runs)
            results.append(entry)
    if certified:
        beside = {(e["attack"], e["algorithm"]): e[FINAL_TEST_ACC] for e in results if FINAL_TEST_ACC in e}
        for index, seed in enumerate(seeds):
            certificate = dict(
                units.run(
                    f"certificate/{seed}",
                    _certificate,
                    args,
                    seed,
                    malicious,
                    line=lambda found, seed=seed: f"label-flip certificate, seed {seed}: {found}",
                )
            )
            certificate["label_flip_acc"] = {
                algorithm: beside[("label-flip", algorithm)][index]
                for algorithm in algorithms
                if ("label-flip", algorithm) in beside
            }
            results.append({"kind": "certificate", "seed": seed, **certificate})
    return results


def accuracy_rows(record: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    entries = [e for e in record["results"] if e["kind"] == "accuracy"]
    attacks = list(dict.fromkeys(e["attack"] for e in entries))
    algorithms = list(dict.fromkeys(e["algorithm"] for e in entries))
    cells = {(e["attack"], e["algorithm"]): _cell(e) for e in entries}
    rows = [[algorithm] + [cells.get((attack, algorithm), "-") for attack in attacks] for algorithm in algorithms]
    return ["algorithm", *attacks], rows


def _cell(entry: dict[str, Any]) -> str:
    if "skipped" in entry:
        return f"skipped ({entry['skipped']})"
    if len(final_acc(entry)) == 1:
        return f"{final_acc(entry, '_mean'):.3f}"
    return f"{final_acc(entry, '_mean'):.3f} ± {final_acc(entry, '_std'):.3f}"


CERTIFICATE_COLUMNS = [
    "seed",
    "malicious clients",
    "labelled nodes they own",
    "flip budget k",
    "certified ratio at k",
    "SVM clean acc",
    "label-flip acc (federated)",
]


def certificate_rows(record: dict[str, Any]) -> list[list[str]]:
    rows = []
    for entry in record["results"]:
        if entry["kind"] != "certificate":
            continue
        ratio, clean = entry["certified_ratio"], entry["svm_clean_accuracy"]
        accuracies = ", ".join(f"{name} {acc:.3f}" for name, acc in entry["label_flip_acc"].items())
        rows.append(
            [
                str(entry["seed"]),
                ",".join(map(str, entry["malicious_clients"])),
                f"{entry['labelled_owned']} of {entry['labelled']}",
                str(entry["budget"]),
                "-" if ratio is None else f"{100 * ratio:.1f}% of {entry['targets']} targets",
                "-" if clean is None else f"{clean:.3f}",
                accuracies or "-",
            ]
        )
    return rows


def markdown(record: dict[str, Any]) -> list[str]:
    columns, rows = accuracy_rows(record)
    lines = ["Final global test accuracy (pooled over all clients) by attack:", ""]
    lines += markdown_table(columns, rows)
    certificates = certificate_rows(record)
    if certificates:
        lines += ["", "Label flipping beside its exact certificate (NTK SVM, federated attacker):", ""]
        lines += markdown_table(CERTIFICATE_COLUMNS, certificates)
    return lines


def print_table(record: dict[str, Any]) -> None:
    columns, rows = accuracy_rows(record)
    tables = [("final global test accuracy by attack", columns, rows)]
    certificates = certificate_rows(record)
    if certificates:
        tables.append(("label flipping beside its certificate", CERTIFICATE_COLUMNS, certificates))
    print_tables(tables)
