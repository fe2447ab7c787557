"""The console that commands print their tables and progress to."""

from __future__ import annotations

from rich.console import Console

LOG_WIDTH = 200  # wide enough for every table of Stamen's commands


def output_console(stderr: bool = False) -> Console:
    """Rich's console on standard output (or error); to a file or pipe, laid out ``LOG_WIDTH`` columns
    wide instead of rich's 80, so that logs keep every figure of a wide table whole."""
    screen = Console(stderr=stderr)
    return screen if screen.is_terminal else Console(stderr=stderr, width=LOG_WIDTH)
