"""A Python run config as the ``stamen`` command's ``-c`` items: one path for the API and the CLI.

:func:`stamen.run` and :func:`stamen.sweep` take a run config as a dict (kebab-case keys as in
``stamen run -c``, or snake_case), a path to an experiment file (``exp.toml``), and keyword
overrides; here they become the ``key=value`` items that ``stamen run -c`` takes, so the checks,
the messages and the command that resumes a run are the command's own.
"""

from __future__ import annotations

import contextlib
import json
import numbers
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

from stamen.contract.key_spelling import kebab_keys, key_name
from stamen.contract.provenance import COMMAND_ENV, COMMIT_ENV, code_version
from stamen.simulations.experiment_file import is_experiment_file, run_config_file

Config = Mapping[str, Any] | str | os.PathLike[str] | None


ARGUMENTS = {"output_dir": "out"}  # the API's arguments that set a run-config key, by the key's attribute


def toml_value(key: str, value: object) -> str:
    """``value`` as a TOML value of an override; ValueError in one line for what no run-config key holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))  # nan, inf and -inf are TOML too
    if isinstance(value, str):
        # a TOML basic string: JSON's escapes are TOML's but for surrogate pairs, so characters are kept as they are
        return json.dumps(value, ensure_ascii=False)
    raise ValueError(f"run config: {key}={value!r} is not a number, true/false or a string")


def override_item(values: Mapping[str, Any]) -> str:
    """A mapping of run-config keys as one ``-c`` item: ``lr=0.1 model="sage"``."""
    for raw in values:
        if not str(raw) or any(char.isspace() or char == "=" for char in str(raw)):
            raise ValueError(f"run config: {raw!r} is not a run-config key; `stamen config` lists every key")
    named = kebab_keys({str(raw): value for raw, value in values.items()}, "run config")
    return " ".join(f"{key}={toml_value(key, value)}" for key, value in named.items())


def run_config_items(config: Config, overrides: Mapping[str, Any], **fixed: Any) -> list[str]:
    """``config``, then ``overrides``, then ``fixed`` (given and not None) as ``-c`` items: later wins."""
    items: list[str] = []
    if isinstance(config, str | os.PathLike):
        path = os.fspath(config)
        if not is_experiment_file(Path(path).name):
            raise ValueError(f"config={path!r}: give a dict of run-config keys or the path of a .toml file")
        absolute = str(Path(path).expanduser().absolute())
        # an item with blanks or '=' would be read as overrides: such a file is read here instead
        items.append(override_item(run_config_file(path)) if " " in absolute or "=" in absolute else absolute)
    elif isinstance(config, Mapping):
        items.append(override_item(config))
    elif config is not None:
        raise TypeError(f"config must be a dict, a path to a .toml file or None, not {type(config).__name__}")
    if overrides:
        items.append(override_item(overrides))
    given = {key: value for key, value in fixed.items() if value is not None}
    named = {key_name(str(key)) for key in [*(config if isinstance(config, Mapping) else {}), *overrides]}
    for key in given:
        if key_name(key) in named:
            argument = ARGUMENTS.get(key, key)
            raise ValueError(f"run config: {key_name(key)} is given twice, as a key and as {argument}=; give it once")
    if given:
        items.append(override_item(given))
    return [item for item in items if item]


def federation_items(clients: int | None, federation: Mapping[str, Any] | None) -> list[str]:
    """Flower's federation overrides: ``federation`` (e.g. resources), then ``clients`` (``num-supernodes``)."""
    items = [override_item(federation)] if federation else []
    if clients is not None:
        if not isinstance(clients, numbers.Integral) or isinstance(clients, bool):
            raise ValueError(f"clients must be a whole number >= 1, got {clients!r}")
        if federation and "num-supernodes" in {key_name(str(key)) for key in federation}:
            raise ValueError(
                "the number of clients is given twice, as clients= and federation's num-supernodes; give it once"
            )
        items.append(f"num-supernodes={int(clients)}")
    return items


@contextlib.contextmanager
def handed_down(command: str) -> Iterator[None]:
    """Inside the block, the runs started record ``command`` and this checkout's commit as their provenance
    (as the ``stamen`` command hands them down); the environment is restored after."""
    with mock.patch.dict(os.environ, {COMMIT_ENV: code_version() or "", COMMAND_ENV: command}):  # restored as it was
        yield


def call_text(function: str, *args: Any, **kwargs: Any) -> str:
    """``stamen.run({...}, clients=3)``: how a run was started from Python, for its provenance."""
    shown = [repr(arg) for arg in args if arg is not None]
    shown += [f"{key}={value!r}" for key, value in kwargs.items() if value is not None]
    return f"{function}({', '.join(shown)})"
