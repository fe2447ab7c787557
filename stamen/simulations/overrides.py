"""``key=value`` overrides as users type them (``-c "dataset='cora' num-server-rounds=50"``).

Flower's own parser accepts a string without ``=`` or a value left empty silently and
answers an unquoted string with a traceback. This one reads the same TOML values and
answers every mistake with one line that shows the fix, e.g. ``strings need quotes:
dataset='cora'``. A word ending in ``.toml`` (``-c exp.toml``, ``-c "exp.toml lr=0.1"``) is an
experiment file of run-config keys (:mod:`stamen.simulations.experiment_file`), read at its place: later wins.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from stamen.simulations.experiment_file import is_experiment_file, run_config_file

# key=value, where value is a quoted TOML string or a run of non-blank characters.
_ITEM = re.compile(r"""\s*([^\s=]+)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)\s*""")


def parse_overrides(items: Iterable[str], what: str = "run config", files: bool = True) -> dict[str, Any]:
    """Merge ``key=value`` strings (later ones win) into one mapping; ``ValueError`` with one line if malformed.

    ``files``: a word ending in ``.toml`` (or a whole item, which may hold blanks) is an experiment
    file whose keys count as overrides given at its place.
    """
    values: dict[str, Any] = {}
    for text in items:
        whole = text.strip()
        if files and is_experiment_file(whole) and " " in whole and Path(whole).expanduser().is_file():  # blanks
            values.update(run_config_file(whole))
            continue
        position = 0
        while position < len(text):
            if not text[position:].strip():
                break
            match = _ITEM.match(text, position)
            if match is None:
                word = text[position:].split()[0]
                if files and is_experiment_file(word):
                    values.update(run_config_file(word))
                    position = text.index(word, position) + len(word)
                    continue
                raise ValueError(f"{what}: {word!r} is not key=value; write e.g. dataset='cora' num-server-rounds=50")
            key, raw = match.groups()
            values[key] = _value(key, raw, what)
            position = match.end()
    return values


def _value(key: str, raw: str, what: str) -> Any:
    if raw == "":
        raise ValueError(f"{what}: {key}= has no value; write e.g. {key}=1 or {key}='text'")
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        if re.fullmatch(r"[^'\"\s]+", raw):
            raise ValueError(f"{what}: strings need quotes: {key}='{raw}'") from None
        raise ValueError(f"{what}: {key}={raw} is not a number, true/false or a quoted string") from None


def toml_value(value: object) -> str:
    """A plain value (a number, true/false or a string) as the TOML value of a ``key=value`` item."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # nan, inf and -inf are TOML too
    # a TOML basic string: JSON's escapes are TOML's but for surrogate pairs, so characters are kept as they are
    return json.dumps(str(value), ensure_ascii=False)


def override_text(values: dict[str, Any]) -> str:
    """``values`` as one ``key=value`` item that :func:`parse_overrides` reads back (to show a command)."""
    return " ".join(f"{key}={toml_value(value)}" for key, value in values.items())
