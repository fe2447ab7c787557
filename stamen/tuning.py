"""Hyper-parameter search from Python: run-config keys searched with Optuna, as ``stamen tune`` does.

:func:`tune` calls the command's own :func:`stamen.experiments.tune.run_tune`: the same checks of the
space against the run config's declared keys, the study folder's lock, the seeded TPE sampler
and median pruner, ``study.db`` (the same call with more ``trials`` goes on), ``tune.json``,
``tune.csv`` and ``tune.png``.
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
from stamen.experiments.tune import TuneSpec, run_tune
from stamen.experiments.tune_space import dimension, parse_dimension, space_file
from stamen.simulations.errors import one_line
from stamen.tables import data_frame

if TYPE_CHECKING:
    import pandas

Space = Mapping[str, str | Sequence[Any]] | Sequence[str] | str | os.PathLike[str]


@dataclass(frozen=True)
class Tuned:
    """A study that ran.

    Attributes:
        dir: the study's folder (``study.db``, ``tune.json``, ``tune.csv``, ``tune.png``, a run folder per trial).
        trials: every trial, in order, as in ``tune.json``: ``number``, ``outcome`` (complete, pruned,
            failed, interrupted), ``params`` (the searched values), ``best_val_acc`` (the objective),
            ``best_round``, ``test_acc_at_best_val``, ``final_val_acc``, ``rounds``, ``run_dir``, ``error``,
            ``repeat_of`` (the earlier trial of the same values whose result this is, not run again).
        best: the completed trials of highest ``best_val_acc``, best first (``top`` of them).
    """

    dir: Path
    trials: list[dict[str, Any]]
    best: list[dict[str, Any]]

    @property
    def best_params(self) -> dict[str, Any]:
        """The searched values of the best completed trial (empty when none completed)."""
        return dict(self.best[0]["params"]) if self.best else {}

    def to_pandas(self) -> pandas.DataFrame:
        """The trials as a DataFrame, one row each, the searched values as columns (needs pandas)."""
        return data_frame([_flat(row) for row in self.trials], "Tuned.to_pandas")


def tune(
    config: Config = None,
    *,
    space: Space,
    trials: int,
    clients: int | None = None,
    name: str = "",
    out: str | os.PathLike[str] = "tunes",
    sampler_seed: int = 0,
    startup: int = 5,
    prune: bool = True,
    prune_startup: int = 3,
    prune_warmup: int = 5,
    top: int = 5,
    progress: bool = False,
    federation: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> Tuned:
    """Run (or resume, up to ``trials`` in all) the study of ``space`` over the fixed ``config`` and ``overrides``.

    Args:
        space: the searched keys: ``{"lr": "log:1e-3..1e-1", "model": ["gcn", "sage"]}`` (a list is a ``cat``),
            ``["lr=log:1e-3..1e-1"]`` (``--space`` texts), or the path of a TOML file with a ``[space]`` table.
        trials: the study's trials in all.
        name: the study folder's name under ``out`` (default: a new ``tune-<time>``); give it again to resume.
        sampler_seed, startup, prune, prune_startup, prune_warmup, top: as ``stamen tune``'s options.
        progress: print each trial and the table, as the command does.
        config, clients, federation, overrides: as for :func:`stamen.run` (the in-process engine always).

    Raises:
        ValueError: bad input, before any trial; the message is the line ``stamen tune`` prints.
        stamen.simulations.errors.RunInterrupted: Ctrl-C; the finished trials are kept (the same call goes on).
    """
    command = call_text("stamen.tune", config, space=space, trials=trials, name=name or None, **overrides)
    try:
        spec = TuneSpec(
            space=_space(space),
            trials=trials,
            run_config=config_values(config, overrides),
            federation_config=federation_values(clients, federation),
            name=name,
            out=os.fspath(out),
            sampler_seed=sampler_seed,
            startup=startup,
            prune=prune,
            prune_startup=prune_startup,
            prune_warmup=prune_warmup,
            top=top,
        )
        result = run_tune(spec, show=progress, provenance=Provenance.of_command(command))
    except ValueError as error:
        raise ValueError(one_line(error)) from None
    return Tuned(result.folder, [trial.row() for trial in result.trials], [trial.row() for trial in result.top])


def _space(space: Space) -> list[Any]:
    if isinstance(space, str | os.PathLike):
        return space_file(os.fspath(space))
    if isinstance(space, Mapping):
        found = []
        for raw, value in space.items():
            key = key_name(str(raw))
            if isinstance(value, str) and ":" in value:
                kind, _, values = value.partition(":")
                found.append(dimension(key, kind.strip(), values.strip(), "space"))
            elif isinstance(value, Sequence) and not isinstance(value, str):
                found.append(dimension(key, "cat", list(value), "space"))
            else:
                raise ValueError(f'space {key}: give "KIND:VALUES" (e.g. "log:1e-3..1e-1") or a list; got {value!r}')
        return found
    if isinstance(space, Sequence) and all(isinstance(text, str) for text in space):
        return [parse_dimension(text, "space") for text in space]
    raise ValueError(
        'space must be a dict such as {"lr": "log:1e-3..1e-1"}, a list of "KEY=KIND:VALUES" texts or the path of a '
        f"TOML file with a [space] table; got {space!r}"
    )


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    flat = {key: value for key, value in row.items() if key != "params"}
    flat.update(row["params"])
    return flat
