"""Strict JSON: every JSON file and line Stamen writes parses with any JSON parser.

Python's :mod:`json` writes a NaN or an infinite float as the bare tokens ``NaN`` and
``Infinity``, which are not JSON: ``jq``, JavaScript and strict parsers refuse the whole
file. Stamen's one rule: **a float that is not finite is written as ``null``** ("no
figure"), and readers take ``null`` where a figure may be missing. :func:`dumps` applies
the rule (:func:`finite`), then dumps with ``allow_nan=False``, so a non-finite value the
rule did not reach (inside an object :mod:`json` converts itself) fails loudly instead of
writing an invalid token.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, +-infinity), at any depth of dicts, lists and
    tuples, replaced by ``None``; tuples become lists (as JSON writes them). Other values are kept."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def dumps(value: Any, *, indent: int | None = None) -> str:
    """``value`` as strict JSON: non-finite floats as ``null`` (:func:`finite`), ``allow_nan=False``."""
    return json.dumps(finite(value), indent=indent, allow_nan=False)
