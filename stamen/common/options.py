"""One vocabulary for every ``stamen`` command, and the old spellings that point to it.

The same thing has the same option everywhere: ``--clients`` (how many clients, i.e.
SuperNodes), ``--partitioner``, ``--seed`` (one) / ``--seeds`` (several),
``-c/--run-config`` (run-config overrides), ``--federation-config``, ``--out``. A word
never means two things: ``--methods`` are unlearning methods, ``--search`` is how a
certificate searches for the worst attack, ``--set`` lists the values a sweep tries.
An option that was renamed fails at once, naming its new spelling. Every number option
reads through :func:`finite_float`: NaN and infinity are refused as argparse refuses a typo.
"""

from __future__ import annotations

import argparse
import math
from typing import Any


def finite_float(text: str) -> float:
    """The argparse ``type`` of every float option: a finite number (``nan``, ``inf`` meet no range).

    Refused with argparse's one error line, exit 2: ``argument --lr: must be a finite number, got 'nan'``.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


class _Renamed(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.error(f"{self.option_strings[0]} is now {self.new}")


def renamed(parser: argparse.ArgumentParser | argparse._ArgumentGroup, old: str, new: str) -> None:
    """``old`` is refused with one line naming ``new`` (hidden from ``--help``)."""
    parser.add_argument(old, action=_Renamed, new=new, dest=f"renamed_{old.strip('-').replace('-', '_')}")


def add_ray_address(parser: argparse.ArgumentParser) -> None:
    """``--ray-address``, for every command that runs the Flower engine."""
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="HOST:PORT",
        help="flower engine: run the simulation on the Ray cluster whose head listens there (`ray start --head "
        "--port PORT`; default: $RAY_ADDRESS if set, else a Ray instance of the run's own); see docs/deployment.md",
    )
