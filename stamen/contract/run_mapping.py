"""A mapping of run-config keys as :meth:`stamen.contract.run_config.RunConfig.from_mapping` reads it.

A mapping comes from Python (:func:`stamen.run`'s dict and keywords), from an experiment file or
from the command line's ``-c key=value`` items (parsed there): its keys in either spelling
(``num-server-rounds`` or ``num_server_rounds``, one key in both refused naming both), its values
plain numbers, true/false or strings. Here they become the kebab-case keys and plain values that
:meth:`~stamen.contract.run_config.RunConfig.from_flower` checks; every refusal is one line.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from stamen.contract.key_spelling import kebab_keys


def plain_value(key: str, value: object, where: str = "run config") -> bool | int | float | str:
    """``value`` as the plain value a run-config key holds (a NumPy number as Python's); ValueError in one line
    for what no run-config key holds (a list, a dict, ``None``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"{where}: {key}={value!r} is not a number, true/false or a string")


def kebab_values(values: Mapping[Any, Any], where: str = "run config") -> dict[str, bool | int | float | str]:
    """``values`` with kebab-case keys and plain values, in their order; ValueError in one line that starts with
    ``where`` for a key no run-config key can be (empty, blanks or ``=`` in it), one key in two spellings or a value
    no key holds."""
    for raw in values:
        if not str(raw) or any(char.isspace() or char == "=" for char in str(raw)):
            raise ValueError(f"{where}: {str(raw)!r} is not a run-config key; `stamen config` lists every key")
    named = kebab_keys({str(raw): value for raw, value in values.items()}, where)
    return {key: plain_value(key, value, where) for key, value in named.items()}
