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
from dataclasses import asdict, dataclass, fields
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


@dataclass(frozen=True)
class AuditSettings:
    """The options of ``stamen audit privacy`` (its ``--help`` says each); :func:`stamen.audit` takes them too.

    ``dp_sgd_epsilons`` and ``client_dp_epsilons``: the budgets audited with DP-SGD and with client-level DP
    (empty: none); a run without DP is audited first.
    """

    dataset: str = "csbm"
    data_root: str = ""
    csbm_nodes: int = 900
    clients: int = 3
    rounds: int = 5
    local_epochs: int = 10
    lr: float = 0.05
    model: str = "sgc"
    canaries_per_client: int = 60
    canary_strength: float = 1.0
    guess_fraction: float = 0.5
    dp_sgd_epsilons: tuple[float, ...] = (1.0, 4.0, 16.0)
    client_dp_epsilons: tuple[float, ...] = (1.0, 4.0, 16.0)
    clipping: str = "server-fixed"
    clipping_norm: float = 1.0
    max_grad_norm: float = 1.0
    dp_batch_size: int = 32
    delta: float = 1e-5
    confidence: float = 0.95
    seed: int = 0


@dataclass(frozen=True)
class AuditReport:
    """An audit that ran: each audited run's result (no DP first), the bound's confidence and delta, the file
    written (``None``: none asked for)."""

    results: list[AuditResult]
    confidence: float
    delta: float
    output: Path | None

    @property
    def violated(self) -> list[AuditResult]:
        """The runs whose empirical lower bound exceeds their accountant's epsilon: a guarantee that fails."""
        return [r for r in self.results if r.accountant_epsilon is not None and r.lower_bound > r.accountant_epsilon]


def configs(args: AuditSettings) -> list[RunConfig]:
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
        for e in _budgets(args.dp_sgd_epsilons, "dp-sgd-epsilons")
    ]
    runs += [
        RunConfig.from_flower({**base, "privacy": "client-dp", "target-epsilon": e})
        for e in _budgets(args.client_dp_epsilons, "client-dp-epsilons")
    ]
    return runs


def _budgets(values: tuple[float, ...], what: str) -> list[float]:
    if isinstance(values, str) or any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise ValueError(f"{what}={values!r} must be a list of numbers, e.g. [1, 4, 16]")
    if any(not v > 0 or math.isinf(v) for v in values):
        raise ValueError(f"{what}={list(values)!r}: every epsilon must be a finite number > 0")
    return [float(v) for v in values]


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


def _audited(config: RunConfig, args: AuditSettings) -> dict:
    """One unit: the audit of one run, as plain JSON."""
    strength, fraction = args.canary_strength, args.guess_fraction
    return asdict(audit_run(config, args.clients, args.canaries_per_client, strength, args.confidence, fraction))


def settings_of(args: argparse.Namespace) -> AuditSettings:
    """The command's options, typed (the epsilons' lists parsed here)."""
    named = {field.name for field in fields(AuditSettings)}
    given = {key: value for key, value in vars(args).items() if key in named}
    given["dp_sgd_epsilons"] = tuple(_epsilons(args.dp_sgd_epsilons, "--dp-sgd-epsilons"))
    given["client_dp_epsilons"] = tuple(_epsilons(args.client_dp_epsilons, "--client-dp-epsilons"))
    return AuditSettings(**given)


def audit_privacy(
    settings: AuditSettings, output: Path | None = None, command: str = "stamen audit privacy", show: bool = True
) -> AuditReport:
    """Audit each run (a unit); with ``output`` (checked: :func:`_output`), each is kept in its journal as it
    finishes and resumed from it, and the report written there. ``command``: what repeats this audit (the
    resume hint). ``show``: the progress on stderr. ValueError in one line for bad settings, before any run."""

    runs = configs(settings)
    if not 0 < settings.guess_fraction <= 1:
        raise ValueError(f"--guess-fraction={settings.guess_fraction} must lie in (0, 1]")
    if not 0 < settings.confidence < 1:
        raise ValueError(f"--confidence={settings.confidence} must lie in (0, 1)")
    if settings.clients < 1 or settings.canaries_per_client < 1:
        raise ValueError("--clients and --canaries-per-client must be at least 1")
    journal = None
    if output is not None:
        recorded = asdict(settings)
        for key in ("dp_sgd_epsilons", "client_dp_epsilons"):
            recorded[key] = list(recorded[key])  # as JSON reads it back
        journal = UnitJournal.open(output, "stamen audit privacy", recorded, "audit output", "or give another --out")
    try:
        with long_job(journal, "audit privacy", command, show=show) as units:
            units.begin([_unit_key(config) for config in runs])
            results = []
            for config in runs:
                found = units.run(
                    _unit_key(config),
                    *(_audited, config, settings),
                    line=lambda r, config=config: (
                        f"audited {config.privacy} (target epsilon {config.target_epsilon:g}): {r['lower_bound']:.3f}"
                    ),
                )
                results.append(AuditResult(**found))
        report = AuditReport(results, settings.confidence, settings.delta, output)
        if output is not None:
            record = {
                "confidence": settings.confidence,
                "delta": settings.delta,
                "results": [asdict(r) for r in results],
            }
            atomic_write(output, strict_json.dumps(record, indent=2))
            assert journal is not None
            journal.remove()  # the output holds every audited run now
    finally:
        if journal is not None:
            journal.close()
    return report


def main(args: argparse.Namespace) -> int:
    """The audit (:func:`audit_privacy`), then its table."""
    output = _output(args.out)
    report = audit_privacy(settings_of(args), output, args.invocation)
    print(table(report.results))
    if report.violated:
        print(f"WARNING: the empirical bound exceeds the accountant's epsilon in {len(report.violated)} run(s)")
    if output is not None:
        print(f"wrote {output}")
    return 0


__all__ = ["AuditReport", "AuditResult", "AuditSettings", "audit_privacy", "audit_run"]
