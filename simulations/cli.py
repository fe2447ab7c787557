"""The ``stamen`` command line: one subcommand per module in :mod:`simulations.commands`."""

from __future__ import annotations

import argparse
import sys

from simulations.commands import bench, certify, deploy, partition, run, unlearn

COMMANDS = (run, partition, bench, certify, unlearn, deploy)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stamen",
        description="Stamen: federated graph learning on Flower (simulations, certificates, unlearning, privacy).",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as error:
        print(f"stamen {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"stamen {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
