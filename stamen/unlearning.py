"""Unlearning from Python: forget a client, some nodes or a class from a finished run, as ``stamen unlearn`` does.

:func:`unlearn` calls the command's own :func:`stamen.cli.commands.unlearn.unlearn_run`: the
same checks, the run directory's lock, the same results written to ``RUN_DIR/unlearn/<request>/``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stamen.config import call_text
from stamen.runs import Run
from stamen.simulations.errors import one_line


@dataclass(frozen=True)
class Unlearned:
    """One request's outcome: its folder (``result.json``, ``report.md``, ``unlearning.png``) and its result
    (every method against the original and retraining from scratch; the dict ``result.json`` holds)."""

    dir: Path
    result: dict[str, Any]


def unlearn(
    run: str | os.PathLike[str] | Run,
    request: str | Sequence[str],
    *,
    methods: str | Sequence[str] = "all",
    seeds: Sequence[int] | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> list[Unlearned]:
    """Forget ``request`` (``client:i``, ``nodes:i:FRACTION``, ``class:c``; or a list of them) from a finished run.

    Args:
        run: the run (a :class:`stamen.Run` or its folder), finished, with its ``model.pt``.
        methods: ``"all"`` or method names (``["wash", "laf"]``); ``stamen unlearn --help`` lists them.
        seeds: model seeds (default: the run's own; others train their original in-process first).
        overwrite: replace earlier results of the same request.
        progress: show each step on stderr.

    Returns:
        One :class:`Unlearned` per request, in order.

    Raises:
        ValueError: bad input, before any slow work; the message is the line ``stamen unlearn`` prints.
        FileNotFoundError: not a finished run's folder; FileExistsError: results exist (``overwrite``).
    """
    # on use: torch, torch_geometric, flwr, scipy, numpy stay out of this module's import
    from stamen.cli.commands.unlearn import unlearn_run

    if not isinstance(run, Run | str | os.PathLike):
        raise ValueError(f"run must be a stamen.Run or the path of a run directory; got {run!r}")
    folder = run.dir if isinstance(run, Run) else Path(os.fspath(run))
    requests = [request] if isinstance(request, str) else list(request) if isinstance(request, Sequence) else []
    if not requests or not all(isinstance(item, str) for item in requests):
        raise ValueError(
            f"request must be a request or a list of them, e.g. 'client:3', 'nodes:0:0.1', 'class:2'; got {request!r}"
        )
    if not isinstance(methods, str) and not (
        isinstance(methods, Sequence) and all(isinstance(name, str) for name in methods)
    ):
        raise ValueError(f"methods must be 'all' or a list of method names, e.g. ['wash', 'laf']; got {methods!r}")
    if seeds is not None and (
        isinstance(seeds, str)
        or not isinstance(seeds, Sequence)
        or any(isinstance(seed, bool) or not isinstance(seed, int) for seed in seeds)
    ):
        raise ValueError(f"seeds must be a list of integers >= 0, e.g. seeds=[0, 1]; got {seeds!r}")
    method = methods if isinstance(methods, str) else ",".join(methods)
    seed_text = "" if seeds is None else ",".join(str(seed) for seed in seeds)
    command = call_text("stamen.unlearn", str(folder), requests, methods=methods, seeds=seeds)
    try:
        done = unlearn_run(
            folder, requests, methods=method, seeds=seed_text, overwrite=overwrite, command=command, show=progress
        )
    except ValueError as error:
        raise ValueError(one_line(error)) from None
    return [Unlearned(out, result) for out, result in done]
