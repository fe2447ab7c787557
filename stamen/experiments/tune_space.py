"""A tuning search space: which run-config keys ``stamen tune`` searches, and over what.

One dimension per key, written ``KEY=KIND:VALUES`` on the command line (``--space``) or as
``KEY = "KIND:VALUES"`` in a TOML file's ``[space]`` table (a TOML list is a ``cat``):

- ``float:LOW..HIGH``: a number, uniform on ``[LOW, HIGH]``;
- ``log:LOW..HIGH``: a number, uniform in ``log`` (``0 < LOW``): learning rates, ``tau``;
- ``int:LOW..HIGH``: a whole number in ``[LOW, HIGH]`` (ends included);
- ``cat:A,B,...``: one of the values (names, numbers or ``true``/``false``).

Every dimension is checked against the key's declaration (:mod:`stamen.contract.keys`): the key
exists, its type fits the kind (``float``/``log`` on a number key, ``int`` on a whole-number
key), both ends (every value of a ``cat``) meet the key's range or choices, ``LOW < HIGH``.
The run's seed, its folder keys and what ``-c`` already fixes cannot be searched. Each
failure is one line naming the dimension and what to write, before any trial starts.
Nothing here imports Optuna until :meth:`Dimension.distribution` is called.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stamen.common.suggest import did_you_mean
from stamen.contract.algorithms import plugin_keys
from stamen.contract.keys import Key
from stamen.contract.run_config import KEYS
from stamen.simulations.experiment_file import read_toml

EXAMPLES = '--space "lr=log:1e-3..1e-1" --space "local-epochs=int:1..5" --space "partitioner=cat:louvain,metis"'
UNSEARCHABLE = ("seed", "run-name", "output-dir", "overwrite", "resume-from")


class Kind(enum.StrEnum):
    """How a dimension draws its values."""

    FLOAT = "float"
    LOG = "log"
    INT = "int"
    CAT = "cat"


@dataclass(frozen=True)
class Dimension:
    """One searched key: ``low``/``high`` for ``float``, ``log``, ``int``; ``choices`` for ``cat``."""

    key: str
    kind: Kind
    low: float | int | None = None
    high: float | int | None = None
    choices: tuple[Any, ...] = ()

    def text(self) -> str:
        """The dimension as written: ``lr=log:0.001..0.1``."""
        if self.kind is Kind.CAT:
            return f"{self.key}=cat:{','.join(_plain(c) for c in self.choices)}"
        return f"{self.key}={self.kind.value}:{_plain(self.low)}..{_plain(self.high)}"

    def values(self) -> list[Any]:
        """The values that bound the dimension (its ends, or every choice): each is checked before a trial."""
        return list(self.choices) if self.kind is Kind.CAT else [self.low, self.high]

    def distribution(self) -> Any:
        """The Optuna distribution of the dimension."""
        # on use: optuna stays out of this module's import
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if self.kind is Kind.CAT:
            return CategoricalDistribution(self.choices)
        if self.kind is Kind.INT:
            return IntDistribution(int(self.low), int(self.high))  # type: ignore[arg-type]
        return FloatDistribution(float(self.low), float(self.high), log=self.kind is Kind.LOG)  # type: ignore[arg-type]


def parse_dimension(text: str, where: str = "--space") -> Dimension:
    """``KEY=KIND:VALUES`` as a checked :class:`Dimension`; ValueError in one line."""
    key, sep, rest = text.partition("=")
    key = key.strip()
    kind, colon, values = rest.partition(":")
    if not sep or not key or not colon or not values.strip():
        raise ValueError(f"{where} {text!r}: write KEY=KIND:VALUES with KIND float, log, int or cat, e.g. {EXAMPLES}")
    return dimension(key, kind.strip(), values.strip(), where)


def dimension(key: str, kind_text: str, values: str | list[Any], where: str = "--space") -> Dimension:
    """The dimension of ``key``: ``kind_text`` and its ``values`` (``LOW..HIGH``, ``A,B``, or a list for ``cat``)."""
    spec = _key(key, where)
    try:
        kind = Kind(kind_text)
    except ValueError:
        raise ValueError(
            f"{where} {key}: unknown kind {kind_text!r}; use float:LOW..HIGH, log:LOW..HIGH, int:LOW..HIGH or cat:A,B"
        ) from None
    if kind is Kind.CAT:
        raw = values if isinstance(values, list) else [part.strip() for part in values.split(",")]
        choices = tuple(_value(spec, item, where) for item in raw)
        if not choices or len(set(map(repr, choices))) != len(choices):
            raise ValueError(f"{where} {key}: give distinct values, e.g. {key}=cat:A,B")
        found = Dimension(key, kind, choices=choices)
    else:
        if isinstance(values, list):
            raise ValueError(f'{where} {key}: a list is a cat dimension; write {key} = "{kind.value}:LOW..HIGH"')
        low_text, dots, high_text = values.partition("..")
        if not dots:
            raise ValueError(f"{where} {key}: write {key}={kind.value}:LOW..HIGH, e.g. {key}={kind.value}:1..5")
        low, high = (_number(key, kind, part.strip(), where) for part in (low_text, high_text))
        if spec.kind == "int" and kind is not Kind.INT:
            raise ValueError(f"{where} {key}: {key} takes whole numbers; write {key}=int:LOW..HIGH")
        if spec.kind == "float" and kind is Kind.INT:
            raise ValueError(f"{where} {key}: {key} takes any number; write {key}=float:LOW..HIGH or log:LOW..HIGH")
        if spec.kind not in ("int", "float"):
            raise ValueError(f"{where} {key}: {key} is not a number; write {key}=cat:A,B")
        if not low < high:
            raise ValueError(f"{where} {key}: LOW must be below HIGH, got {_plain(low)}..{_plain(high)}")
        if kind is Kind.LOG and low <= 0:
            raise ValueError(f"{where} {key}: a log range needs LOW > 0, got {_plain(low)}; use float:LOW..HIGH")
        found = Dimension(key, kind, low, high)
    for value in found.values():
        try:
            spec.check(spec.typed(value))
        except ValueError as error:
            raise ValueError(f"{where} {found.text()}: {error}") from None
    return found


def space_file(path: str) -> list[Dimension]:
    """The ``[space]`` table of the TOML file ``path``: ``lr = "log:1e-3..1e-1"``, ``model = ["gcn", "sage"]``."""
    document = read_toml(path)
    table = document.get("space")
    if not isinstance(table, dict) or not table:
        raise ValueError(f'{path}: no [space] table; write e.g. [space] then lr = "log:1e-3..1e-1"')
    outside = [key for key in document if key != "space"]
    if outside:
        raise ValueError(f"{path}: {outside[0]!r} is outside the [space] table; fixed run-config values go in -c")
    found = []
    for key, value in table.items():
        where = f"{path} [space]"
        if isinstance(value, list):
            found.append(dimension(key, "cat", value, where))
        elif isinstance(value, str) and ":" in value:
            kind, _, values = value.partition(":")
            found.append(dimension(key, kind.strip(), values.strip(), where))
        else:
            raise ValueError(f'{where} {key}: write {key} = "KIND:VALUES" (e.g. "log:1e-3..1e-1") or a list of values')
    return found


def check_space(space: Iterable[Dimension], fixed: Mapping[str, Any]) -> list[Dimension]:
    """The whole space: at least one dimension, each key once and not fixed by ``-c`` (``fixed``)."""
    found = list(space)
    if not found:
        raise ValueError(f"give the search space, e.g. {EXAMPLES} (or --space-file FILE with a [space] table)")
    seen: set[str] = set()
    for item in found:
        if item.key in seen:
            raise ValueError(f"the space names {item.key} twice; give each key one dimension")
        if item.key in fixed:
            raise ValueError(f"{item.key} is both searched and fixed by -c; drop one of them")
        seen.add(item.key)
    return found


def _key(key: str, where: str) -> Key:
    every = {**KEYS, **plugin_keys()}  # a plug-in algorithm's keys are searched as the built-in ones
    if key not in every:
        raise ValueError(
            f"{where} {key}: no run-config key {key!r}{did_you_mean(key, every)}; `stamen config` lists them"
        )
    if key in UNSEARCHABLE:
        what = "the run seed is fixed for a study: give it with -c seed=N" if key == "seed" else "stamen tune names"
        raise ValueError(
            f"{where} {key}: {what}" + ("" if key == "seed" else " its trials' folders itself (--out, --name)")
        )
    return every[key]


def _number(key: str, kind: Kind, text: str, where: str) -> float | int:
    try:
        value = int(text) if kind is Kind.INT else float(text)
    except ValueError:
        whole = "a whole number" if kind is Kind.INT else "a number"
        raise ValueError(f"{where} {key}: {text!r} is not {whole}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} {key}: {text!r} is not a finite number")
    return value


def _value(spec: Key, raw: Any, where: str) -> Any:
    """A ``cat`` value as the key's type: names as they are, numbers and true/false parsed."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip().strip("'\"")
    kind = spec.kind
    try:
        if kind == "bool" and text in ("true", "false"):
            return text == "true"
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        pass
    if kind != "str":
        raise ValueError(f"{where} {spec.name}: {text!r} is not {'true/false' if kind == 'bool' else 'a ' + kind}")
    return text


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
