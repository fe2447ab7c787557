"""The ``stamen`` command line: one subcommand per module in :mod:`stamen.cli.commands`."""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import signal
import sys
from importlib import metadata
from types import ModuleType
from typing import NoReturn

from stamen.cli.helptext import plain
from stamen.simulations.errors import (
    EXIT_ENVIRONMENT,
    EnvironmentFailed,
    RunFailed,
    RunInterrupted,
    is_bad_input,
    one_line,
    os_error_line,
)

# The commands (modules of stamen.cli.commands) and their one-line help. A command's module
# is imported only when that command runs, so `stamen --help` and `stamen config` load no
# PyTorch; a test keeps these lines equal to the modules' own help.
SUMMARIES: dict[str, str] = {
    "run": "run a federated simulation (flwr run, offline, cleaned up)",
    "sweep": "run-config values x seeds, resumable, with mean +- std per config",
    "tune": "search run-config values with Optuna (seeded TPE, median pruning), resumable",
    "compare": "several runs or sweep groups side by side: one table, overlaid curves",
    "partition": "preview a partition: nodes, edges and classes per client",
    "bench": "measure the headline figures into benchmarks/",
    "certify": "exact label-flip poisoning certificates (NTK + SVM/KRR, MILP)",
    "unlearn": "forget a client, some nodes or a class from a finished run; compare with retraining",
    "deploy": "run on several machines: certificates, SuperLink, SuperNodes",
    "config": "list the run-config keys: defaults, choices, ranges, help",
    "audit": "empirical privacy audits of training runs",
}
COMMANDS: tuple[str | ModuleType, ...] = tuple(SUMMARIES)


def _command(entry: str | ModuleType) -> tuple[str, str | ModuleType]:
    return (entry if isinstance(entry, str) else entry.__name__.rsplit(".", 1)[-1]), entry


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line, naming the problem and ``--help`` (argparse
    prints its whole usage first); every subcommand's parser is one too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")

    def format_help(self) -> str:
        """The help, with the docstrings' Sphinx markup as plain text (:func:`stamen.cli.helptext.plain`)."""
        return plain(super().format_help())


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (``only=None``: the commands listed, none imported) or of ``only`` alone."""
    parser = OneLineParser(
        prog="stamen",
        description="Stamen: federated graph learning on Flower (simulations, certificates, unlearning, privacy).",
    )
    parser.add_argument("--version", action="version", version=f"stamen {metadata.version('stamen')}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands: dict[str, str | ModuleType] = {}
    for entry in COMMANDS:  # a command listed twice (by name and as a module): its first entry
        commands.setdefault(*_command(entry))
    for name, entry in commands.items():
        if only is None and isinstance(entry, str):
            subparsers.add_parser(name, help=SUMMARIES[name], add_help=False)
        elif only is None or name == only:
            module = importlib.import_module(f"stamen.cli.commands.{entry}") if isinstance(entry, str) else entry
            module.add_parser(subparsers)
    return parser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 done, 1 a run failed, 2 bad input, 3 a run finished degraded, 130 interrupted."""
    argv = sys.argv[1:] if argv is None else list(argv)
    names = {_command(entry)[0] for entry in COMMANDS}
    args = build_parser(argv[0] if argv and argv[0] in names else None).parse_args(argv)
    # The command as the user gave it (to repeat it: resume hints), from argv, never sys.argv:
    # a caller of main(argv), a test or the Python API, has other words in sys.argv.
    args.invocation = shlex.join(["stamen", *argv])
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops a command as Ctrl-C does, cleanly
    # A shell starts background jobs with SIGINT ignored, and Python then never raises
    # KeyboardInterrupt: a command started so could not be stopped by SIGINT at all.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a reader that went away shows here, in the handler below, not at exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except RunFailed as error:
        print(f"stamen {args.command}: failed: {error}", file=sys.stderr)
        return 1
    except RunInterrupted as error:
        print(f"stamen {args.command}: {error}", file=sys.stderr)
        return 130
    except EnvironmentFailed as error:
        print(f"stamen {args.command}: failed: {one_line(error)}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    except (ValueError, RuntimeError) as error:
        print(f"stamen {args.command}: error: {one_line(error)}", file=sys.stderr)
        return 2
    except OSError as error:  # a folder not writable, a full disk, a busy port...: one line, never a traceback
        print(f"stamen {args.command}: error: {os_error_line(error)}", file=sys.stderr)
        return 2 if is_bad_input(error) else EXIT_ENVIRONMENT
    except KeyboardInterrupt:
        print(f"stamen {args.command}: interrupted", file=sys.stderr)
        return 130


def _reader_gone() -> int:
    """stdout's reader went away (``stamen config | head``): stop quietly, as a Unix tool stopped by SIGPIPE.

    stdout is pointed at the null device first, so that Python's own flush at exit finds no pipe to fail on.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (a caller's stream): nothing is flushed to a pipe at exit
        pass
    return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
