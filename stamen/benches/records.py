"""What every benchmark record shares: the machine, the command, the heading of its table."""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import platform
import shlex
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from rich.table import Table

from stamen.common.options import renamed
from stamen.common.screen import output_console
from stamen.contract.figures import EARLIER_FINAL_TEST_ACC, FINAL_TEST_ACC
from stamen.contract.provenance import code_version, provenance
from stamen.simulations.lifetime import die_with_parent, kill_tree


def final_acc(entry: dict[str, Any], part: str = "") -> Any:
    """A bench unit's or entry's final headline test accuracy (``part``: ``"_mean"``, ``"_std"``).

    Units kept by an earlier version (a resumed journal) and the records it wrote named it
    ``test_acc``.
    """
    name = FINAL_TEST_ACC + part
    return entry[name] if name in entry else entry[EARLIER_FINAL_TEST_ACC + part]


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """``-c/--run-config KEY=VALUE`` for every run of a bench, and ``--jobs N`` processes at once."""
    parser.add_argument(
        "--run-config",
        "-c",
        dest="set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run-config values for every run (as stamen run -c)",
    )
    renamed(parser, "--set", "--run-config")
    parser.add_argument(
        "--jobs", type=int, default=1, help="runs at once, each in its own process (one per core; wall times overlap)"
    )


def run_in_processes(
    function: Callable[..., Any], tasks: list[tuple], jobs: int, report: Callable[[Any], None]
) -> None:
    """``function(*task)`` for every task in ``jobs`` spawned processes; ``report`` each result as it ends.

    Spawned workers import torch afresh with the parent's thread settings and no forked
    state. Ctrl-C or SIGTERM (a KeyboardInterrupt here) stops everything at once: the
    workers and whatever they started are killed and the tasks not yet begun cancelled
    before the interrupt goes on, so nothing of the bench runs or writes afterwards.
    (A pool left to close itself would first finish every task already queued.)
    """
    # on use: psutil stays out of this module's import
    import psutil

    # A worker dies with this process (kill -9 included); what it starts is under reapers watching it.
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=multiprocessing.get_context("spawn"), initializer=die_with_parent
    )
    try:
        for future in as_completed([pool.submit(function, *task) for task in tasks]):
            report(future.result())
    except BaseException:
        for child in psutil.Process().children():
            kill_tree(child.pid)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def int_list(text: str, what: str) -> list[int]:
    """``"10,50,100"`` as ``[10, 50, 100]``; ValueError naming ``what`` if malformed or not positive."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise ValueError(f"{what} must be comma-separated integers, got {text!r}") from error
    if not values or min(values) < 1:
        raise ValueError(f"{what} must be positive integers, got {text!r}")
    return values


def machine_description() -> dict[str, Any]:
    # on use: torch, torch_geometric, flwr stay out of this module's import
    import flwr
    import torch
    import torch_geometric

    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "flwr": flwr.__version__,
        "torch_geometric": torch_geometric.__version__,
        **({"gpu": torch.cuda.get_device_name(0)} if torch.cuda.is_available() else {}),
    }


def new_record(bench: str, name: str, setting: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """A benchmark record: what ran, from which code, where, when, and what it measured."""
    return {
        "bench": bench,
        "name": name,
        "command": "stamen " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "code": code_version(),
        "provenance": provenance(),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine_description(),
        "setting": setting,
        "results": results,
    }


def header(record: dict[str, Any]) -> list[str]:
    """The table's title (the record's name) and the line saying how and where it was measured."""
    machine = record["machine"]
    return [
        f"## {record['name']}",
        "",
        f"`{record['command']}`{_at_code(record)} on {record['date']}: {machine['platform']}, {machine['cpus']} CPUs, "
        f"Python {machine['python']}, torch {machine['torch']}, flwr {machine['flwr']}, "
        f"PyG {machine['torch_geometric']}.",
        "",
    ]


def _at_code(record: dict[str, Any]) -> str:
    return f" (code {record['code']})" if record.get("code") else ""


def print_tables(tables: list[tuple[str, list[str], list[list[str]]]]) -> None:
    """Print each ``(title, columns, rows)`` on screen as a table, numbers right-aligned.

    A narrow terminal folds a long cell over lines rather than cutting it short.
    """

    console = output_console()
    for title, columns, rows in tables:
        table = Table(title=title)
        for column in columns:
            table.add_column(column, justify="right", overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)


def markdown_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + [
        "| " + " | ".join(row) + " |" for row in rows
    ]
