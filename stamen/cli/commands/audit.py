"""``stamen audit privacy``: an empirical lower bound on epsilon from one training run with canaries.

Each client's training nodes lend ``--canaries-per-client`` canaries: nodes whose label is
replaced by a uniformly drawn *other* class and (with ``--canary-strength`` s != 1) whose
features are scaled by s, which makes them easier to memorise. A fair coin per canary keeps
it in the client's training nodes or takes it out (out of validation and test too). The
federation then trains through the real round loop and ClientApp (the in-process grid,
:class:`stamen.simulations.inprocess.InProcessGrid`, with the server's privacy setup and Flower's
DP wrappers); the auditor scores each canary by minus the final global model's loss on its
randomised label and turns membership guesses into a lower bound on epsilon
(:mod:`stamen.unlearn.privacy_audit`, Steinke et al. 2023).

A canary's in/out is the add/remove of one training node, the neighbouring relation of
DP-SGD's node-level accountant; a client-level guarantee covers it too (a node is part of
its client's data), so both accountants' epsilons must stay above the bound. The bound is
loose by design (one run, few canaries): a value near the accountant's epsilon is not
expected; a value *above* it means the guarantee fails.

The clients read their data through :func:`stamen.client.data_source.partition_data`; for the
length of a run this command opens a data source that hands them the planted copies
(:func:`stamen.experiments.privacy_audit.planted_federation`) and counts the reads, so a run whose clients never saw the
canaries is refused, not reported.
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import asdict
from pathlib import Path

from stamen.cli.helptext import HelpFormatter
from stamen.common.file_writes import atomic_write
from stamen.common.options import finite_float, renamed
from stamen.contract import strict_json
from stamen.contract.run_config import CLIPPINGS, KEYS, RunConfig
from stamen.experiments.journal import UnitJournal
from stamen.experiments.long_job import long_job
from stamen.experiments.privacy_audit import AuditResult, audit_run, table


def _epsilons(text: str, flag: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{flag}={text!r} is not a comma-separated list of numbers, e.g. 1,4,16") from None
    if any(not v > 0 or math.isinf(v) for v in values):
        raise ValueError(f"{flag}={text!r}: every epsilon must be a finite number > 0")
    return values


def _output(text: str) -> Path | None:
    """``--out``: a new .json file in a writable folder (an interrupted audit's journal beside it is resumed)."""
    if not text:
        return None
    path = Path(text)
    if path.suffix != ".json":
        raise ValueError(f"--out={text!r} must name a .json file")
    if not path.parent.is_dir():
        raise NotADirectoryError(f"--out={text!r}: folder {str(path.parent)!r} does not exist; create it first")
    if path.exists() or path.is_symlink():
        raise FileExistsError(f"--out={text!r} exists; Stamen does not overwrite it, choose another name")
    if not os.access(path.parent, os.W_OK | os.X_OK):  # found now, not after the audit's training runs
        raise PermissionError(13, "not writable: the audit writes --out there", str(path.parent))
    return path


def configs(args: argparse.Namespace) -> list[RunConfig]:
    """The runs to audit: no DP, DP-SGD at each budget, client-level DP at each budget (all checked up front)."""
    base = {
        "dataset": args.dataset,
        "data-root": args.data_root,
        "csbm-nodes": args.csbm_nodes,
        "num-server-rounds": args.rounds,
        "local-epochs": args.local_epochs,
        "lr": args.lr,
        "model": args.model,
        "dropout": 0.0,
        "weight-decay": 0.0,
        "seed": args.seed,
        "min-clients": 1,
        "device": "cpu",
        "target-delta": args.delta,
        "dp-batch-size": args.dp_batch_size,
        "max-grad-norm": args.max_grad_norm,
        "clipping": args.clipping,
        "clipping-norm": args.clipping_norm,
    }
    runs = [RunConfig.from_flower(base)]
    runs += [
        RunConfig.from_flower({**base, "privacy": "dp-sgd", "target-epsilon": e})
        for e in _epsilons(args.dp_sgd_epsilons, "--dp-sgd-epsilons")
    ]
    runs += [
        RunConfig.from_flower({**base, "privacy": "client-dp", "target-epsilon": e})
        for e in _epsilons(args.client_dp_epsilons, "--client-dp-epsilons")
    ]
    return runs


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("audit", help="empirical privacy audits of training runs")
    kinds = parser.add_subparsers(dest="audit", required=True, metavar="AUDIT")
    privacy = kinds.add_parser(
        "privacy",
        help="one-run canary audit: empirical lower bound on epsilon beside the accountant's (Steinke et al. 2023)",
    )

    privacy.formatter_class = HelpFormatter

    def key(name: str) -> str:  # the run-config key's own help, declared once
        return KEYS[name].help

    privacy.add_argument("--dataset", default="csbm", help=key("dataset"))
    privacy.add_argument("--data-root", default="", help=key("data-root"))
    privacy.add_argument("--csbm-nodes", type=int, default=900, help=key("csbm-nodes"))
    privacy.add_argument("--clients", type=int, default=3, help="number of clients")
    privacy.add_argument("--rounds", type=int, default=5, help="federated rounds of each audited run")
    privacy.add_argument("--local-epochs", type=int, default=10, help=key("local-epochs"))
    privacy.add_argument("--lr", type=finite_float, default=0.05, help=key("lr"))
    privacy.add_argument("--model", default="sgc", help="a decoupled model DP-SGD can train: sgc or mlp")
    privacy.add_argument(
        "--canaries-per-client", type=int, default=60, help="training nodes of each client that become canaries"
    )
    privacy.add_argument("--canary-strength", type=finite_float, default=1.0, help="canary features are scaled by this")
    privacy.add_argument(
        "--guess-fraction", type=finite_float, default=0.5, help="share of canaries guessed (half in, half out)"
    )
    privacy.add_argument("--dp-sgd-epsilons", default="1,4,16", help="DP-SGD budgets; '' for none")
    privacy.add_argument("--client-dp-epsilons", default="1,4,16", help="client-level DP budgets; '' for none")
    privacy.add_argument("--clipping", default="server-fixed", choices=CLIPPINGS, help=key("clipping"))
    privacy.add_argument("--clipping-norm", type=finite_float, default=1.0, help=key("clipping-norm"))
    privacy.add_argument("--max-grad-norm", type=finite_float, default=1.0, help=key("max-grad-norm"))
    privacy.add_argument("--dp-batch-size", type=int, default=32, help=key("dp-batch-size"))
    privacy.add_argument("--delta", type=finite_float, default=1e-5, help=key("target-delta"))
    privacy.add_argument(
        "--confidence", type=finite_float, default=0.95, help="confidence of the empirical lower bound on epsilon"
    )
    privacy.add_argument("--seed", type=int, default=0, help=key("seed"))
    privacy.add_argument(
        "--out",
        default="",
        metavar="FILE",
        help="write the results here too (a new .json file); each audited run is kept in FILE.partial.jsonl as it "
        "finishes and the same command resumes from it. Without --out nothing is kept: an interrupted audit "
        "starts over",
    )
    renamed(privacy, "--output", "--out")
    privacy.set_defaults(func=main)


def _unit_key(config: RunConfig) -> str:
    """The key of an audited run: its privacy and budget."""
    return config.privacy if config.privacy == "none" else f"{config.privacy}/{config.target_epsilon:g}"


def _audited(config: RunConfig, args: argparse.Namespace) -> dict:
    """One unit: the audit of one run, as plain JSON."""
    strength, fraction = args.canary_strength, args.guess_fraction
    return asdict(audit_run(config, args.clients, args.canaries_per_client, strength, args.confidence, fraction))


def main(args: argparse.Namespace) -> int:
    """Audit each run (a unit); with ``--out``, each is kept in its journal as it finishes and resumed from it."""
    output = _output(args.out)
    runs = configs(args)
    if not 0 < args.guess_fraction <= 1:
        raise ValueError(f"--guess-fraction={args.guess_fraction} must lie in (0, 1]")
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence={args.confidence} must lie in (0, 1)")
    if args.clients < 1 or args.canaries_per_client < 1:
        raise ValueError("--clients and --canaries-per-client must be at least 1")
    journal = None
    if output is not None:
        settings = {
            k: v
            for k, v in vars(args).items()
            if k not in ("out", "renamed_output", "func", "command", "audit", "invocation")
        }
        journal = UnitJournal.open(output, "stamen audit privacy", settings, "audit output", "or give another --out")
    try:
        with long_job(journal, "audit privacy", args.invocation) as units:
            units.begin([_unit_key(config) for config in runs])
            results = []
            for config in runs:
                found = units.run(
                    _unit_key(config),
                    *(_audited, config, args),
                    line=lambda r, config=config: (
                        f"audited {config.privacy} (target epsilon {config.target_epsilon:g}): {r['lower_bound']:.3f}"
                    ),
                )
                results.append(AuditResult(**found))
        print(table(results))
        violated = [r for r in results if r.accountant_epsilon is not None and r.lower_bound > r.accountant_epsilon]
        if violated:
            print(f"WARNING: the empirical bound exceeds the accountant's epsilon in {len(violated)} run(s)")
        if output is not None:
            report = {"confidence": args.confidence, "delta": args.delta, "results": [asdict(r) for r in results]}
            atomic_write(output, strict_json.dumps(report, indent=2))
            journal.remove()  # the output holds every audited run now
            print(f"wrote {output}")
    finally:
        if journal is not None:
            journal.close()
    return 0
