"""How one run-config key is declared: its section, type, default, constraint and help.

:class:`stamen.contract.run_config.RunConfig` declares every key once, as a dataclass field
made by :meth:`Section.key`; the field's metadata holds a :class:`Key`. From the
declaration come the type checks and one-line errors (:meth:`Key.parse`), the
``pyproject.toml`` defaults (a test keeps them equal), ``stamen config`` and the
key table of docs/reference.md. A key's constraint is at most one of

- a :class:`Bound` on a number (``> 0``, ``>= 1``, ``lie in (0, 1]``);
- ``choices``: the accepted names, each with a line of help, from a registry;
- a :class:`Form`: a string's shape, as a predicate with its description.

Every float key must also be finite (:meth:`Key.check`): NaN and infinity meet no range and
are refused before anything is created (``lr must be a finite number, got nan``). Every int key
must fit a 64-bit integer, the widest that NumPy and PyTorch take, after its own range.

A key whose default is ``None`` is optional: ``of`` names its type, and ``None`` (not given)
meets every constraint. :mod:`stamen.contract.certify_config` declares the options of
``stamen certify`` the same way, named as flags (``--depth must be >= 1, got 0``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stamen.common.suggest import did_you_mean

Value = bool | int | float | str

KINDS = {bool: "bool", int: "int", float: "float", str: "str"}
_ARTICLE = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a quoted string"}


@dataclass(frozen=True)
class Bound:
    """A range on a number; ``None`` leaves a side open-ended."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, value: float) -> bool:
        """Whether ``value`` lies in the range (NaN lies in none)."""
        if math.isnan(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def text(self) -> str:
        """``"be > 0"``, ``"be >= 1"`` or ``"lie in (0, 1]"`` (as in ``lr must be > 0``)."""
        if self.high is None:
            return f"be {'>' if self.low_open else '>='} {_number(self.low)}"
        if self.low is None:
            return f"be {'<' if self.high_open else '<='} {_number(self.high)}"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"lie in {left}{_number(self.low)}, {_number(self.high)}{right}"


def gt(low: float) -> Bound:
    return Bound(low, low_open=True)


def ge(low: float) -> Bound:
    return Bound(low)


def within(low: float, high: float, ends: str = "[]") -> Bound:
    """``within(0, 1, "(]")``: 0 < value <= 1."""
    return Bound(low, high, ends[0] == "(", ends[1] == ")")


@dataclass(frozen=True)
class Form:
    """The shape of a string value: ``test`` accepts it, ``text`` describes it (``cpu, cuda or cuda:N``), or
    gives the words when asked (a registry's entries, read live: ``dataset``'s)."""

    test: Callable[[str], bool]
    text: str | Callable[[], str]

    @property
    def words(self) -> str:
        """What :attr:`text` says now."""
        return self.text if isinstance(self.text, str) else self.text()


@dataclass(frozen=True)
class Key:
    """One run-config key (``name`` is kebab-case, the attribute has ``_`` for ``-``)."""

    name: str
    section: str
    default: Value | None  # None: an optional key, not given
    help: str
    bound: Bound | None = None
    choices: Mapping[str, str] | None = None
    form: Form | None = None
    of: type | None = None  # the type of an optional key (default None: not given)

    @property
    def kind(self) -> str:
        return KINDS[type(self.default) if self.default is not None else self.of]  # type: ignore[index]

    @property
    def attribute(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    @property
    def optional(self) -> bool:
        """Whether ``None`` (not given) is a value of this key."""
        return self.default is None

    def typed(self, value: Any) -> Value | None:
        """``value`` if it has this key's type (an int is a float), else ValueError in one line."""
        kind = self.kind
        if value is None and self.optional:
            return None
        if isinstance(value, bool):
            ok = kind == "bool"
        elif kind == "float":
            ok = isinstance(value, (int, float))
        else:
            ok = isinstance(value, {"int": int, "str": str}.get(kind, bool))
        if ok:
            return float(value) if kind == "float" else value
        what = self.name if self.name.startswith("-") else f"run-config key {self.name!r}"
        raise ValueError(f"{what} must be {_ARTICLE[kind]}, got {value!r}")

    def check(self, value: Value | None) -> None:
        """ValueError in one line unless ``value`` meets the constraint (a float key's: finite, first)."""
        if value is None and self.optional:
            return
        if self.kind == "float" and not math.isfinite(value):  # type: ignore[arg-type]
            raise ValueError(f"{self.name} must be a finite number, got {value!r}")
        if self.bound is not None and not self.bound.holds(value):  # type: ignore[arg-type]
            raise ValueError(f"{self.name} must {self.bound.text()}, got {value!r}")
        if self.kind == "int" and not -(2**63) <= value < 2**63:  # type: ignore[operator]
            raise ValueError(f"{self.name} must be a 64-bit integer (below 2**63 in size), got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ValueError(
                f"unknown {self.name} {value!r}; {self.name} must be one of: {', '.join(self.choices)}"
                f"{did_you_mean(str(value), self.choices)}"
            )
        if self.form is not None and not self.form.test(value):  # type: ignore[arg-type]
            raise ValueError(f"{self.name} must be {self.form.words}, got {value!r}")

    def accepted(self) -> str:
        """What the key accepts, in words (for ``stamen config`` and docs/reference.md)."""
        if self.choices is not None:
            return "one of: " + ", ".join(self.choices)
        if self.bound is not None:
            return f"{_ARTICLE[self.kind]} {self.bound.text().removeprefix('be ').removeprefix('lie ')}"
        if self.form is not None:
            return self.form.words
        return _ARTICLE[self.kind]


@dataclass(frozen=True)
class Section:
    """A feature's group of keys; :meth:`key` declares one of its dataclass fields.

    ``after``: an algorithm's section (:attr:`stamen.contract.algorithms.AlgorithmSpec.section`) is listed after the
    core section of this name in ``stamen config`` (empty: after every core section).
    """

    name: str
    help: str
    after: str = ""

    def key(
        self,
        default: Value | None,
        help: str,
        *,
        bound: Bound | None = None,
        choices: Mapping[str, str] | tuple[str, ...] | None = None,
        form: Form | None = None,
        of: type | None = None,
    ) -> Any:
        """A key; ``default=None`` with ``of=int`` (``str``, ``float``) declares an optional one."""
        if isinstance(choices, tuple):
            choices = dict.fromkeys(choices, "")
        if (default is None) != (of is not None):
            raise TypeError("an optional key (default None) names its type with of=..., and only it")
        spec = Key("", self.name, default, help, bound, choices, form, of)
        return field(default=default, metadata={"key": spec})


def option(
    name: str,
    default: Value,
    help: str,
    *,
    bound: Bound | None = None,
    choices: Mapping[str, str] | tuple[str, ...] | None = None,
    form: Form | None = None,
) -> Key:
    """A plug-in's own run-config key (``stamen.option("slowmo-beta", 0.9, "server momentum", bound=within(0, 1))``),
    declared as :meth:`Section.key` declares a built-in one; its plug-in's registration names its section.

    Its default is a bool, int, float or str, never None: Flower's run-config table, which carries a key to the
    other processes of a run, holds no None."""
    if isinstance(choices, tuple):
        choices = dict.fromkeys(choices, "")
    if type(default) not in KINDS:
        raise ValueError(f"option {name!r}: its default must be a bool, int, float or str, got {default!r}")
    return Key(name, "", default, help, bound, choices, form)


def declared_keys(cls: type, prefix: str = "") -> dict[str, Key]:
    """Every key of a dataclass declared with :meth:`Section.key`, by kebab-case name, in order.

    ``prefix="--"`` names each key as a command-line flag (``--labeled-per-class``) in its
    messages; the mapping's keys stay the plain kebab-case names.
    """
    keys = {}
    for item in dataclasses.fields(cls):
        if "key" not in item.metadata:
            continue
        name = item.name.replace("_", "-")
        keys[name] = dataclasses.replace(item.metadata["key"], name=prefix + name)
    return keys


def _number(value: float | None) -> str:
    """``0.5``, ``1``, ``4294967296``: a whole bound in full (``:g`` would round 2**32 to ``4.29497e+09``)."""
    if value is not None and float(value).is_integer():
        return str(int(value))
    return f"{value:g}"
