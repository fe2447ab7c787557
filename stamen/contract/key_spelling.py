"""A run-config key's two spellings: kebab-case as the command writes it (``num-server-rounds``) and
snake_case as Python writes it (``num_server_rounds``).

The Python API and experiment files take either; both turn them into the command's spelling here,
and both refuse one key given in both spellings in one place, in the same line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

Value = TypeVar("Value")


def key_name(key: str) -> str:
    """A run-config key as the command writes it: ``num_server_rounds`` -> ``num-server-rounds``."""
    return key.replace("_", "-")


def kebab_keys(values: Mapping[str, Value], where: str) -> dict[str, Value]:
    """``values`` with every key as the command writes it, in their order.

    One key in two spellings (``num-server-rounds`` and ``num_server_rounds``) is a ValueError of one
    line that starts with ``where`` (``run config``, or a file's path) and names both spellings.
    """
    kept: dict[str, Value] = {}
    spelled: dict[str, str] = {}
    for raw, value in values.items():
        key = key_name(raw)
        if key in spelled:
            raise ValueError(f"{where}: {key} is given twice, as {spelled[key]!r} and {raw!r}; give it once")
        spelled[key] = raw
        kept[key] = value
    return kept
