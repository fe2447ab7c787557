"""``stamen run``: ``flwr run`` of the Stamen app, offline, on a SuperLink of its own.

Takes the same ``--run-config`` and ``--federation-config`` as ``flwr run``. Before
starting Flower it checks everything a run can check (:mod:`stamen.simulations.preflight`):
a mistake fails in seconds, with one line and exit code 2. It then starts a simulation
SuperLink on free ports with a ``FLWR_HOME`` of the run's own, streams the run's logs,
and stops the SuperLink and every process below it.

The outcome comes from the run directory's ``status.json``, and only when this command's
run wrote it (its token): exit 0 and the result table for a finished run, exit 3 for a
run that finished without some clients (degraded), exit 1 for a failed run. Ctrl-C or
SIGTERM stops every process of the run within seconds, marks the run interrupted and
prints the command that resumes it; exit 130.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Sequence

from rich.table import Table

from stamen.cli.helptext import HelpFormatter
from stamen.client.algorithms import ClientAlgorithm, client_algorithm
from stamen.common.options import add_ray_address
from stamen.common.screen import output_console
from stamen.contract.provenance import Provenance
from stamen.contract.run_config import RunConfig
from stamen.server.outputs import summary_lines, summary_table
from stamen.simulations.federation_config import FederationConfig
from stamen.simulations.overrides import parse_overrides
from stamen.simulations.preflight import PreparedRun, check_config
from stamen.simulations.runner import Engine, ProgressMode, RunResult, ray_address_for, run

EXIT_DEGRADED = 3
EPILOG = """examples:
  stamen run                                          the default: FedAvg, csbm, 10 clients, 100 rounds
  stamen run --engine inprocess -c "dataset='cora' data-root='/data' num-server-rounds=50"
  stamen run -c "algorithm='fedlog' missing-classes=1" --federation-config "num-supernodes=5"

every run-config key, its default, choices and help: stamen config (one key: stamen config KEY)"""


ENGINES = tuple(engine.value for engine in Engine)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a federated simulation (flwr run, offline, cleaned up)",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument(
        "--run-config",
        "-c",
        action="append",
        default=[],
        help="run-config overrides as for flwr run, e.g. \"dataset='cora' num-server-rounds=50\"",
    )
    parser.add_argument(
        "--federation-config",
        action="append",
        default=[],
        help='federation overrides as for flwr run, e.g. "num-supernodes=10 client-resources-num-cpus=1"',
    )
    parser.add_argument(
        "--clients", type=int, default=None, help="number of clients (short for --federation-config num-supernodes=N)"
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="flower",
        help="flower: flwr run on a local simulation SuperLink (default); inprocess: the same ServerApp and "
        "ClientApp in this process, a round's clients trained together (fastest; same outputs and numbers)",
    )
    parser.add_argument(
        "--in-turn",
        action="store_true",
        help="inprocess engine: answer each client's message alone, one after another, as the flower engine does "
        "(otherwise the clients of a round that run FedAvg's local training train together; the same numbers)",
    )
    add_ray_address(parser)
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--quiet", action="store_true", help="print the result table only")
    output.add_argument(
        "--verbose", action="store_true", help="stream the full log instead of a progress bar (always kept in run.log)"
    )
    parser.set_defaults(func=main)


def federation_args(args: argparse.Namespace) -> list[str]:
    """``--federation-config`` with ``--clients`` folded in."""
    return [*args.federation_config, *([f"num-supernodes={args.clients}"] if args.clients is not None else [])]


def launch(
    run_config: Sequence[str],
    federation_config: Sequence[str],
    *,
    engine: str = "flower",
    in_turn: bool = False,
    mode: str = "progress",
    announce: Callable[[PreparedRun, Engine], None] | None = None,
    ray_address: str | None = None,
    provenance: Provenance | None = None,
) -> RunResult:
    """``stamen run``'s items, parsed here into a :class:`RunConfig` and a :class:`FederationConfig`, then the
    typed entry (:func:`stamen.simulations.runner.run`). ValueError in one line for bad input, before anything
    is written. ``provenance``: the command (default: this process's)."""
    chosen = Engine.named(engine)
    address = ray_address_for(chosen, ray_address)
    config = check_config(RunConfig.from_mapping(parse_overrides(run_config)))
    federation = FederationConfig.from_mapping(
        parse_overrides(federation_config, "federation config", files=False), on_cluster=bool(address)
    )
    hint = "stamen run " + " ".join(
        [f"--engine {engine}"] * (chosen is not Engine.FLOWER)
        + ["--in-turn"] * in_turn
        + [f"--ray-address {shlex.quote(address)}"] * bool(address)
        + [f"-c {shlex.quote(c)}" for c in run_config]
        + [f"--federation-config {shlex.quote(f)}" for f in federation_config]
    )
    return run(
        config,
        federation=federation,
        engine=chosen,
        provenance=provenance or Provenance.of_process(),
        progress=ProgressMode(mode),
        in_turn=in_turn,
        ray_address=ray_address,
        resume_hint=hint.strip(),
        announce=announce,
    )


def main(args: argparse.Namespace) -> int:
    mode = "quiet" if args.quiet else "verbose" if args.verbose else "progress"
    announce = None if args.quiet else _announce
    launched = launch(
        args.run_config,
        federation_args(args),
        engine=args.engine,
        in_turn=args.in_turn,
        mode=mode,
        announce=announce,
        ray_address=args.ray_address,
        provenance=Provenance.of_process(),  # the command line, or the one that started this command
    )
    if launched.summary is None:
        print(f"stamen run: {launched.run_dir} already finished all {launched.rounds} rounds; nothing left to run")
        return 0
    print_summary(launched.summary)
    return EXIT_DEGRADED if launched.summary.get("degraded") else 0


def _announce(run: PreparedRun, engine: Engine) -> None:
    config = run.config
    print(
        f"stamen run: {config.algorithm} on {config.dataset}, {run.federation['num-supernodes']} clients, "
        f"{config.num_server_rounds} rounds, {engine.value} engine"
        f"{f' on the Ray cluster at {run.ray_address}' if run.ray_address else ''} -> {run.run_dir.path}",
        flush=True,
    )


def print_summary(summary: dict) -> None:
    """One table of the figures the run was for, then its privacy, certificates, unlearning and clients."""
    model = "" if _own_model(summary["algorithm"]) else f" / {summary['model']}"
    title = f"{summary['algorithm']}{model} on {summary['dataset']}, {summary['clients']} clients"
    table = Table(title=title)
    for column in ("figure", "final round", "best validation round"):
        table.add_column(column, justify="left" if column == "figure" else "right", overflow="fold")
    for row in summary_table(summary):
        table.add_row(*row)
    console = output_console()
    console.print(table)
    for line in summary_lines(summary):
        console.print(line, highlight=False)
    console.print(
        f"wall time {summary['total_wall_seconds']:.1f} s from the engine's start (its start-up included, the "
        f"command's own not), peak memory {summary['peak_memory_gb']:.2f} GB "
        f"(server loop {summary['wall_seconds']:.1f} s, "
        f"{summary['seconds_per_round']:.3f} s per round: clients' training {_seconds(summary, 'clients')} in all, "
        f"the slowest client's {_seconds(summary, 'client')}); devices: {', '.join(summary['devices'])}",
        highlight=False,
    )
    nodes = summary.get("client_nodes") or []
    if nodes:  # absent in summaries of earlier versions
        console.print(
            f"clients: {summary['client_processes']} processes on {len(nodes)} node(s) ({', '.join(nodes)}), "
            f"their peak memory added up {summary['client_peak_memory_gb']:.2f} GB",
            highlight=False,
        )
    console.print(f"outputs: {summary['run_dir']}", highlight=False)


def _seconds(summary: dict, who: str) -> str:
    value = summary.get(f"{who}_train_seconds_per_round")  # absent in summaries of earlier versions
    return "-" if value is None else f"{value:.3f} s"


def _own_model(algorithm: str) -> bool:
    """The algorithm trains a model of its own (FedLoG's), not the run's ``model``."""
    _, part = client_algorithm(algorithm)
    return type(part).new_model is not ClientAlgorithm.new_model
