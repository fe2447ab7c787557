"""What Stamen relays of Flower's log: line by line, without colour codes or Flower's misleading lines.

Flower's console handler colours each level (``\\x1b[92mINFO \\x1b[0m:``) whether or not it
writes to a terminal, so the log of ``flwr run --stream`` carries escape codes into every
file it reaches (``run.log``, a deployment's logs) and into pipes. Every log of a Flower
process that Stamen shows or keeps goes through :func:`clean_line`: colour and other ANSI
escape sequences removed (:func:`stamen.server.runlog.strip_ansi`, the one function), and the lines
of :data:`DROPPED` left out: Flower 1.42's simulation prints ``Since flwr 1.32, default
simulated SuperNodes changed from 10 to 2.`` on every run, whatever ``num-supernodes``
says (``stamen run --clients 3`` sets it; the next line of the log names the real count).
:func:`relayed_call` runs a command and relays its output so to any number of sinks (the
terminal, a log file).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import TextIO

from stamen.server.runlog import strip_ansi
from stamen.simulations import lifetime

DROPPED = ("default simulated SuperNodes changed from 10 to 2",)


def clean_line(line: str) -> str | None:
    """One line of a Flower log as Stamen relays it: no escape codes; None for a line of :data:`DROPPED`."""
    plain = strip_ansi(line)
    return None if any(marker in plain for marker in DROPPED) else plain


def plain_flower_console() -> None:
    """Flower's console handler in this process colours only a terminal (``stamen audit``, ``--verbose``
    of the in-process engine): no colour codes go into a file or a pipe its stream is redirected to."""
    # on use: flwr stays out of this module's import
    from stamen.simulations.flower_internals.console import colour_only_on_a_terminal

    colour_only_on_a_terminal()


def relay(lines: Sequence[str] | TextIO, sinks: Sequence[TextIO]) -> None:
    """Every line of ``lines`` that :func:`clean_line` keeps, written and flushed to each sink."""
    for line in lines:
        kept = clean_line(line)
        if kept is None:
            continue
        for sink in sinks:
            sink.write(kept)
            sink.flush()


def relayed_call(command: Sequence[str], sinks: Sequence[TextIO], **popen) -> int:
    """:func:`stamen.simulations.lifetime.call` with the command's stdout and stderr relayed to ``sinks``.

    On any exception (Ctrl-C) the command's tree is killed first, as by ``lifetime.call``.
    """
    process = lifetime.start(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1, **popen
    )
    try:
        assert process.stdout is not None
        relay(process.stdout, sinks)
        return process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        if process.stdout is not None:
            process.stdout.close()
