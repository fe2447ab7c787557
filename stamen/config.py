"""A Python run config as the typed config: one constructor for the API, the command line's checks and messages.

:func:`stamen.run`, :func:`stamen.sweep` and :func:`stamen.tune` take a run config as a dict
(kebab-case keys as in ``stamen run -c``, or snake_case), a path to an experiment file
(``exp.toml``), and keyword overrides; here they become one mapping of run-config keys
(:func:`config_values`) and a :class:`~stamen.contract.run_config.RunConfig`
(:meth:`~stamen.contract.run_config.RunConfig.from_mapping`, the command line's own constructor),
and ``clients=`` with ``federation=`` a :class:`~stamen.simulations.federation_config.FederationConfig`.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stamen.contract.key_spelling import kebab_keys, key_name
from stamen.contract.run_config import RunConfig
from stamen.contract.run_mapping import kebab_values
from stamen.simulations.experiment_file import is_experiment_file, run_config_file
from stamen.simulations.federation_config import FederationConfig

Config = Mapping[str, Any] | str | os.PathLike[str] | None


ARGUMENTS = {"output_dir": "out"}  # the API's arguments that set a run-config key, by the key's attribute


def config_values(config: Config, overrides: Mapping[str, Any], **fixed: Any) -> dict[str, Any]:
    """``config``, then ``overrides``, then ``fixed`` (given and not None) as one mapping of kebab-case run-config
    keys: later wins. ValueError in one line: a key in two spellings in one of them, a value no key holds, a
    ``fixed`` key given in ``config`` or ``overrides`` too, a path that is no experiment file."""
    values: dict[str, Any] = {}
    if isinstance(config, str | os.PathLike):
        path = os.fspath(config)
        if not is_experiment_file(Path(path).name):
            raise ValueError(f"config={path!r}: give a dict of run-config keys or the path of a .toml file")
        values.update(run_config_file(str(Path(path).expanduser().absolute())))
    elif isinstance(config, Mapping):
        values.update(kebab_values(config))
    elif config is not None:
        raise TypeError(f"config must be a dict, a path to a .toml file or None, not {type(config).__name__}")
    named = set(values)
    values.update(kebab_values(overrides))
    named |= {key_name(str(key)) for key in overrides}
    given = {key: value for key, value in fixed.items() if value is not None}
    for key in given:
        if key_name(key) in named:
            argument = ARGUMENTS.get(key, key)
            raise ValueError(f"run config: {key_name(key)} is given twice, as a key and as {argument}=; give it once")
    values.update(kebab_values(given))
    return values


def run_config(config: Config, overrides: Mapping[str, Any], **fixed: Any) -> RunConfig:
    """:func:`config_values` as a checked :class:`RunConfig` (:meth:`RunConfig.from_mapping`); ValueError in one
    line."""
    return RunConfig.from_mapping(config_values(config, overrides, **fixed))


def federation_values(clients: int | None, federation: Mapping[str, Any] | None) -> dict[str, Any]:
    """Flower's federation keys (kebab-case): ``federation`` (e.g. resources), then ``clients`` (``num-supernodes``).
    ValueError in one line: ``clients`` not a whole number, or the number of clients given twice."""
    values = kebab_keys({str(key): value for key, value in (federation or {}).items()}, "federation config")
    if clients is not None:
        if not isinstance(clients, numbers.Integral) or isinstance(clients, bool):
            raise ValueError(f"clients must be a whole number >= 1, got {clients!r}")
        if "num-supernodes" in values:
            raise ValueError(
                "the number of clients is given twice, as clients= and federation's num-supernodes; give it once"
            )
        values["num-supernodes"] = int(clients)
    return values


def federation_config(clients: int | None, federation: Mapping[str, Any] | None) -> FederationConfig:
    """:func:`federation_values` as a checked :class:`FederationConfig`; ValueError in one line."""
    return FederationConfig.from_mapping(federation_values(clients, federation))


def call_text(function: str, *args: Any, **kwargs: Any) -> str:
    """``stamen.run({...}, clients=3)``: how a run was started from Python, for its provenance."""
    shown = [repr(arg) for arg in args if arg is not None]
    shown += [f"{key}={value!r}" for key, value in kwargs.items() if value is not None]
    return f"{function}({', '.join(shown)})"
