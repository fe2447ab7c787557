"""``stamen run``: ``flwr run`` of the Stamen app, offline, on a SuperLink of its own.

Takes the same ``--run-config`` and ``--federation-config`` as ``flwr run``. Before
starting Flower it checks the run config, loads and partitions the data once (so a
wrong name, a missing file or too many clients fail in a second with a clear
message), and picks the run directory. It then starts a simulation SuperLink on
free ports with a project-local ``FLWR_HOME``, streams the run's logs, stops the
SuperLink by its PID and prints the result table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import time
from pathlib import Path

from flwr.common.config import get_project_config, parse_config_args

from graphs import FederationSpec, build_federation
from models.run_config import RunConfig
from server.app import check_run_config
from server.checkpoint import checkpoint_dir
from server.outputs import resolve_run_dir, summary_table
from simulations.flower import PROJECT_ROOT, LocalSuperLink, PeakMemory, flwr_run

# Stamen's simulation defaults: ten clients, one CPU each (Flower's own default of two
# CPUs per client would run one client at a time on a two-core machine).
FEDERATION_DEFAULTS: dict[str, object] = {"num-supernodes": 10, "client-resources-num-cpus": 1}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run a federated simulation (flwr run, offline, cleaned up)")
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
    parser.add_argument("--quiet", action="store_true", help="do not stream the run's logs")
    parser.set_defaults(func=main)


def default_run_config() -> dict[str, object]:
    return dict(get_project_config(PROJECT_ROOT)["tool"]["flwr"]["app"]["config"])


def prepare(run_overrides: list[str], federation_overrides: list[str]) -> tuple[RunConfig, dict[str, object]]:
    """Check everything that can be checked before Flower starts; fix the run directory."""
    values = default_run_config()
    values.update(parse_config_args(run_overrides) if run_overrides else {})
    config = check_run_config(values)
    federation = dict(FEDERATION_DEFAULTS)
    federation.update(parse_config_args(federation_overrides) if federation_overrides else {})
    num_clients = federation["num-supernodes"]
    if not isinstance(num_clients, int) or num_clients < 1:
        raise ValueError(f"num-supernodes must be a positive integer, got {num_clients!r}")
    if config.min_clients > num_clients:
        raise ValueError(f"min-clients={config.min_clients} exceeds num-supernodes={num_clients}")
    build_federation(FederationSpec.from_run_config(config.to_flower(), num_clients))  # raises on bad data or partition
    if config.budgets():
        from certify.ntk import ARCHITECTURES

        if config.certify_arch not in ARCHITECTURES:
            raise ValueError(f"unknown certify-arch {config.certify_arch!r}; choose one of: {', '.join(ARCHITECTURES)}")
    run_dir = checkpoint_dir(config.resume_from) if config.resume_from else resolve_run_dir(config)
    config = dataclasses.replace(config, output_dir=str(run_dir.parent), run_name=run_dir.name)
    return config, federation


def simulate(config: RunConfig, federation: dict[str, object], stream: bool = True) -> dict:
    """``flwr run`` one prepared config on a SuperLink of our own; return its summary.

    The summary gains ``total_wall_seconds`` (start of the SuperLink to the end of the
    run) and ``peak_memory_gb`` (the largest resident memory of the SuperLink and all
    its descendants: ServerApp, simulation engine, Ray workers).
    """
    run_dir = Path(config.output_dir) / config.run_name
    flwr_home = PROJECT_ROOT / ".flwr" / config.run_name
    started = time.perf_counter()
    with LocalSuperLink(flwr_home) as superlink, PeakMemory(superlink.pid) as memory:
        code = flwr_run(flwr_home, config.to_flower(), federation, stream=stream)
    summary_file = run_dir / "summary.json"
    if code != 0 or not summary_file.exists():
        raise RuntimeError(
            f"the Flower run did not finish (flwr exit code {code}); "
            f"logs: {flwr_home / 'superlink.log'}, partial outputs: {run_dir}"
        )
    shutil.rmtree(flwr_home, ignore_errors=True)
    summary = json.loads(summary_file.read_text())
    summary.update({"total_wall_seconds": time.perf_counter() - started, "peak_memory_gb": memory.peak_gb})
    summary_file.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main(args: argparse.Namespace) -> int:
    config, federation = prepare(args.run_config, args.federation_config)
    print(
        f"stamen run: {config.algorithm} on {config.dataset}, {federation['num-supernodes']} clients, "
        f"{config.num_server_rounds} rounds -> {Path(config.output_dir) / config.run_name}",
        flush=True,
    )
    print_summary(simulate(config, federation, stream=not args.quiet))
    return 0


def print_summary(summary: dict) -> None:
    from rich.table import Table

    from simulations.screen import output_console

    title = f"{summary['algorithm']} / {summary['model']} on {summary['dataset']}, {summary['clients']} clients"
    table = Table(title=title)
    for column in ("figure", "final round", "best validation round"):
        table.add_column(column, justify="left" if column == "figure" else "right", overflow="fold")
    for row in summary_table(summary):
        table.add_row(*row)
    console = output_console()
    console.print(table)
    console.print(
        f"wall time {summary['total_wall_seconds']:.1f} s, peak memory {summary['peak_memory_gb']:.2f} GB "
        f"(server loop {summary['wall_seconds']:.1f} s, "
        f"{summary['seconds_per_round']:.3f} s per round, of which client training "
        f"{summary['client_train_seconds_per_round']:.3f} s); devices: {', '.join(summary['devices'])}"
    )
    console.print(f"outputs: {summary['run_dir']}")
