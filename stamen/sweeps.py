"""A sweep from Python: run-config values x seeds, as ``stamen sweep`` runs it (the same function), as a table.

:func:`sweep` calls :func:`stamen.cli.commands.sweep.run_sweep`: every config is checked
before the first run, the sweep folder is locked, finished runs are skipped (the same call
resumes a sweep), and ``sweep.json``, ``sweep.csv`` and ``sweep.png`` are written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stamen.config import Config, call_text, config_values, federation_values
from stamen.contract.key_spelling import key_name
from stamen.contract.provenance import Provenance
from stamen.experiments.sweep import check_set, fixed_file_keys, grid_file
from stamen.runs import load
from stamen.simulations.errors import one_line
from stamen.simulations.experiment_file import is_scalar
from stamen.tables import data_frame

if TYPE_CHECKING:
    import pandas

    from stamen.runs import Run

Grid = Mapping[str, Sequence[Any]] | str | os.PathLike[str]


@dataclass(frozen=True)
class Sweep:
    """A sweep that ran.

    Attributes:
        dir: the sweep folder (``<out>/<name>``), one run directory per run.
        rows: the sweep's table, one dict per config: ``config`` (its name), the swept values,
            ``runs`` (finished runs) and each figure's mean and std over the seeds
            (``final_test_acc_mean``, ``final_test_acc_std``, ...), the columns of ``sweep.csv``.
        failed: the names of the runs that failed (their logs are in ``dir / "logs"``).
    """

    dir: Path
    rows: list[dict[str, Any]]
    failed: list[str]

    def runs(self) -> list[Run]:
        """Every run of the sweep that wrote a folder, read (:func:`stamen.load`)."""
        return [load(path.parent) for path in sorted(self.dir.glob("*/config.json"))]

    def to_pandas(self) -> pandas.DataFrame:
        """The table as a DataFrame, one row per config (needs pandas: ``pip install 'stamen[pandas]'``)."""
        return data_frame(self.rows, "Sweep.to_pandas")


def sweep(
    config: Config = None,
    *,
    grid: Grid,
    seeds: Sequence[int] = (0,),
    clients: int | None = None,
    engine: str = "inprocess",
    jobs: int = 1,
    name: str = "",
    out: str | os.PathLike[str] = "sweeps",
    progress: bool = False,
    federation: Mapping[str, Any] | None = None,
    ray_address: str | None = None,
    **overrides: Any,
) -> Sweep:
    """Run (or resume) the sweep of ``grid`` x ``seeds`` over the fixed ``config`` and ``overrides``.

    Args:
        grid: the swept keys and their values, ``{"lr": [0.01, 0.05], "model": ["gcn", "sage"]}``,
            or the path of an experiment file: fixed run-config keys at its top level and the swept ones in a
            ``[grid]`` table (``stamen sweep --grid``); a key both fixed and swept is refused.
        seeds: every config runs once per seed.
        name: the sweep folder's name under ``out`` (default: a new ``sweep-<time>``); give it again
            to resume.
        jobs: runs at a time (more than 1, or ``engine="flower"``: each run in a process of its own).
        progress: print the sweep's progress and table, as the command does.
        config, clients, engine, federation, ray_address, overrides: as for :func:`stamen.run`.

    Raises:
        ValueError: bad input, before anything runs; the message is the line ``stamen sweep`` prints.
    """
    # on use: torch, torch_geometric, flwr stay out of this module's import
    from stamen.cli.commands.sweep import SweepSpec, run_sweep

    command = call_text("stamen.sweep", config, grid=grid, seeds=list(seeds), name=name or None, **overrides)
    try:
        fixed: dict[str, Any] = {}  # an experiment file's fixed keys, beside its [grid]
        if isinstance(grid, str | os.PathLike):
            sets, fixed = grid_file(os.fspath(grid)), fixed_file_keys(os.fspath(grid))
        elif isinstance(grid, Mapping):
            sets = [(key_name(key), _values(key, values)) for key, values in grid.items()]
            for key, values in sets:
                check_set(key, values, "grid", f"grid {key}")
        else:
            raise ValueError(
                "grid must be a dict of keys to lists of values, e.g. {'lr': [0.01, 0.05]}, or the path of a TOML "
                f"file with a [grid] table; got a {type(grid).__name__}"
            )
        spec = SweepSpec(
            grid=sets,
            seeds=_seeds(seeds),
            run_config={**fixed, **config_values(config, overrides)},
            federation_config=federation_values(clients, federation),
            engine=engine,
            jobs=jobs,
            name=name,
            out=os.fspath(out),
            ray_address=ray_address,
        )
        result = run_sweep(spec, show=progress, provenance=Provenance.of_command(command))
    except ValueError as error:
        raise ValueError(one_line(error)) from None
    return Sweep(result.folder, result.rows(), list(result.failed))


def _values(key: str, values: object) -> list[Any]:
    if isinstance(values, str) or not isinstance(values, Sequence) or not values or not all(map(is_scalar, values)):
        raise ValueError(f"grid {key}: give a list of values, e.g. {{{key!r}: [1, 2]}}; got {values!r}")
    return list(values)


def _seeds(seeds: Sequence[int]) -> list[int]:
    if isinstance(seeds, str) or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise ValueError(f"seeds must be integers >= 0, e.g. seeds=[0, 1, 2]; got {seeds!r}")
    return list(seeds)
