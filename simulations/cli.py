"""The ``stamen`` command line: one subcommand per module in :mod:`simulations.commands`."""

from __future__ import annotations

import argparse
import signal
import sys

from simulations.commands import audit, bench, certify, deploy, partition, run, unlearn
from simulations.errors import RunFailed, RunInterrupted

COMMANDS = (run, partition, bench, certify, unlearn, deploy, audit)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stamen",
        description="Stamen: federated graph learning on Flower (simulations, certificates, unlearning, privacy).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 done, 1 a run failed, 2 bad input, 3 a run finished degraded, 130 interrupted."""
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM stops a command as Ctrl-C does, cleanly
    try:
        return int(args.func(args))
    except RunFailed as error:
        print(f"stamen {args.command}: failed: {error}", file=sys.stderr)
        return 1
    except RunInterrupted as error:
        print(f"stamen {args.command}: {error}", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, FileExistsError, NotADirectoryError, RuntimeError) as error:
        print(f"stamen {args.command}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"stamen {args.command}: interrupted", file=sys.stderr)
        return 130


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


if __name__ == "__main__":
    sys.exit(main())
