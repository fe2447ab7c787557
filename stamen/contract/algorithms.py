"""The FL algorithms a run may use: one registry entry per algorithm, by run-config name.

An algorithm is a server part (a factory ``make_strategy(config) -> Strategy``, named
``module`` or ``module:function`` when one module holds the factories of several
variants, loaded by :mod:`stamen.server.algorithms`) and a client part (a module's ``PART``, a
:class:`stamen.client.algorithms.ClientAlgorithm`, named ``module``, or ``module:NAME`` when one
module holds the parts of several variants, loaded by :mod:`stamen.client.algorithms`). This
floor may not import either side, so a spec names them by dotted module path; both
sides load them with :mod:`importlib` only when a run asks for the algorithm.

What the run config, its validation, ``stamen config``, ``--help`` choices and the
docs know about an algorithm comes from its spec (``stamen/algorithms/<name>/__init__.py`` for Stamen's own),
never from a second list:

- ``aggregates``: the server keeps a global model (clients evaluate the model they
  receive; the run reports it). ``False``: every client keeps its own model.
- ``privacy``: the ``privacy`` modes the algorithm admits (``none`` always).
- ``options``: the run-config keys this algorithm reads besides the core ones: another algorithm's that it shares
  (fedyogi reads the ``fedopt-*`` keys fedadam declares); its own ``keys`` join them when it is registered.
- ``resumable``: ``resume-from`` can continue its run exactly (the server's state
  between rounds is the checkpoint: the weights and the client sampler).
- ``averages``: the server's aggregate is the clients' weights averaged by training
  nodes (then perhaps transformed, as FedAvgM's momentum), so ``secure-aggregation``
  may compute it from their masked sum (:mod:`stamen.server.secagg`).
- ``shares_encoder``: the server averages only the encoder (the heads stay with the
  clients), so the model must have encoder weights.
- ``least_clients``: ``(a, b)``: a round needs at least ``a f + b`` replies, ``f`` =
  ``num-malicious-nodes`` (the Byzantine-robust rules); checked before a run starts, in
  every round, and by the attack bench.
- ``unlearnable``: its clients train the run's node classifier as FedAvg's do, so the
  unlearning methods can edit or retrain the global model (``unlearn-request``).
- ``any_task``: its clients run FedAvg's local step, which is the run's task's own
  (:mod:`stamen.client.tasks`), and its server only combines weights: it knows nothing of what the
  model predicts, so every task of :mod:`stamen.contract.tasks` may use it.
- ``equals``, ``equals_when``: ``(key, value, why)`` settings under which the algorithm computes exactly what
  algorithm ``equals`` does (FedProx at ``proximal-mu=0`` is FedAvg), said once where its figures appear
  (:mod:`stamen.contract.equivalences`); ``key`` may be a :class:`Condition` instead, a fact of the run config
  no one key holds (FedProx taking one local step a round), with ``value`` ``True``.
- ``task``: non-empty: the one task the algorithm is made for (GCFL and FedStar are graph-FL
  methods, for clients holding graph sets: ``graph-classification``); every other task refuses
  it, with that reason (:func:`stamen.contract.tasks.check_task`).

- ``headline``: which model's figures are the algorithm's headline, marked in sweep, compare and bench
  tables: ``global`` (the model the server keeps: FedAvg-like methods) or ``clients`` (each client's own
  model: what a personalised method is for). Left out: ``global`` where the server aggregates a whole
  model (``aggregates`` and not ``shares_encoder``), else ``clients``.
- ``notes_when``: ``(key, value, note)``: a run with ``key=value`` carries ``note`` in its summary's ``notes``
  (a setting that makes its figures mean something else, e.g. test labels used in model selection).
- ``keys``: run-config keys the algorithm declares itself (a plug-in's options; :func:`stamen.contract.keys.option`):
  they take part in validation, ``stamen config``, sweeps, tune and every engine as the built-in keys do, and
  :meth:`stamen.contract.run_config.RunConfig.option` reads them.

- ``section``: the section of ``stamen config`` its keys are listed in (default: one named after the algorithm,
  after every built-in section); algorithms that share keys share a section, declared by the first of them.
- ``check``: a rule between run-config keys that only this algorithm has (fedsage+'s schedule against the
  rounds), called after the keys' own checks with the run config; ValueError in one line.

Every algorithm enters :data:`ALGORITHMS` through :func:`register_algorithm`, Stamen's own as a researcher's:
from a package's ``stamen.algorithms`` entry points (Stamen's in its ``pyproject.toml``, one line per algorithm,
each naming the ``SPEC`` in its folder ``stamen/algorithms/<name>/``) or from Python (:mod:`stamen.common.registry`).
Adding an algorithm: its folder (spec, server part, client part, math) and its entry-point line.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from stamen.common.registry import BUILT_IN, PYTHON, Registry
from stamen.contract.keys import Key, Section
from stamen.contract.privacy_modes import PRIVACY

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig


class Headline(StrEnum):
    """Which model's figures an algorithm's headline is (:attr:`AlgorithmSpec.headline`)."""

    GLOBAL = "global"  # the model the server keeps and sends every client
    CLIENTS = "clients"  # each client's own (personalised) model


@dataclass(frozen=True)
class Condition:
    """A fact of a run config that no one key holds, for an algorithm spec's ``equals_when``.

    Attributes:
        words: the fact in words, as a note says it (``one local step a round (...)``).
        holds: whether a run config has it.
    """

    words: str
    holds: Callable[[RunConfig], bool]


@dataclass(frozen=True)
class AlgorithmSpec:
    """One FL algorithm, as the run config and both apps know it (see the module docstring)."""

    name: str
    help: str
    server: str
    client: str
    aggregates: bool = True
    privacy: tuple[str, ...] = ("none",)
    options: tuple[str, ...] = ()
    resumable: bool = True
    averages: bool = False
    shares_encoder: bool = False
    least_clients: tuple[int, int] | None = None
    unlearnable: bool = False
    any_task: bool = False
    task: str = ""
    equals: str = ""
    equals_when: tuple[tuple[str | Condition, bool | int | float | str, str], ...] = ()
    keys: tuple[Key, ...] = ()
    section: Section | None = None
    check: Callable[[RunConfig], None] | None = None
    notes_when: tuple[tuple[str, bool | int | float | str, str], ...] = ()
    headline: Headline | None = None  # None: derived from aggregates and shares_encoder (the module docstring)

    def __post_init__(self) -> None:
        whole = self.aggregates and not self.shares_encoder
        derived = Headline.GLOBAL if whole else Headline.CLIENTS
        object.__setattr__(self, "headline", derived if self.headline is None else Headline(self.headline))

    def least_replies(self, malicious: int) -> int:
        """The fewest replies a round of this algorithm works with, ``malicious`` of them arbitrary."""
        factor, constant = self.least_clients or (0, 1)
        return factor * malicious + constant

    def admits(self, privacy: str) -> bool:
        return privacy in self.privacy


GRAPH_FL_TASK = "graph-classification"  # the task of the graph-FL methods (stamen.contract.tasks names it too)


_NAME = re.compile(r"[a-z0-9][a-z0-9+._-]*")
_PART = re.compile(r"[A-Za-z_][\w.]*(:[A-Za-z_]\w*)?")


def register_algorithm(spec: AlgorithmSpec, *, origin: str = PYTHON) -> AlgorithmSpec:
    """Enter ``spec`` in :data:`ALGORITHMS` (as registered, its ``keys`` among its ``options``); ValueError in
    one line when the spec cannot be one.

    ``origin``: where it comes from (:mod:`stamen.common.registry`): from Python in this process (the
    default), an entry point, or Stamen itself.
    """
    if not isinstance(spec, AlgorithmSpec):
        raise ValueError(f"an algorithm plug-in is a stamen.AlgorithmSpec, got {type(spec).__name__}")
    if not _NAME.fullmatch(spec.name):
        raise ValueError(f"algorithm name {spec.name!r} must be lower-case letters, digits and - + . _")
    for part, path in (("server", spec.server), ("client", spec.client)):
        if not _PART.fullmatch(path):
            raise ValueError(f"algorithm {spec.name!r}: {part} must name a module or module:attribute, got {path!r}")
    if origin != BUILT_IN:
        _check_facts(spec)
    if not all(isinstance(key, Key) for key in spec.keys):
        raise ValueError(f"algorithm {spec.name!r}: each key is a stamen.option(name, ...) with a kebab-case name")
    section = spec.section.name if spec.section is not None else spec.name
    keys = tuple(dataclasses.replace(key, section=section) for key in spec.keys)
    if keys:
        _check_keys(spec.name, keys)
    options = (*spec.options, *(key.name for key in keys if key.name not in spec.options))
    registered = dataclasses.replace(spec, keys=keys, options=options)
    for check in _SPEC_CHECKS:
        check(registered, origin)
    ALGORITHMS.add(spec.name, registered, origin)
    return registered


def import_part(module: str, path: str, part: str, name: str) -> object:
    """``module`` of algorithm ``name``'s ``part`` (``server`` or ``client``; ``path``: the spec's text), or a
    ValueError in one line naming the plug-in whose part it is."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ValueError(
            f"{path} (the {part} part of algorithm {name!r}) cannot be imported ({error}); install its package, "
            "or register the algorithm with the module that defines it"
        ) from None


def _check_facts(spec: AlgorithmSpec) -> None:
    """A plug-in's facts are of their types and name what exists (privacy modes): ValueError in one line."""
    name = spec.name
    if not isinstance(spec.help, str):
        raise ValueError(f"algorithm {name!r}: help must be a string, got {spec.help!r}")
    if isinstance(spec.privacy, str) or not all(isinstance(mode, str) for mode in spec.privacy):
        raise ValueError(f"algorithm {name!r}: privacy must be a tuple of privacy modes; got {spec.privacy!r}")
    least = spec.least_clients
    if least is not None and not (
        isinstance(least, tuple) and len(least) == 2 and all(type(n) is int and n >= 0 for n in least)
    ):
        raise ValueError(f"algorithm {name!r}: least_clients must be (factor, constant), integers >= 0; got {least!r}")
    if any(mode not in PRIVACY for mode in spec.privacy):
        raise ValueError(f"algorithm {name!r}: privacy must be a tuple of {', '.join(PRIVACY)}; got {spec.privacy!r}")


def _check_keys(name: str, keys: tuple[Key, ...]) -> None:
    """A plug-in's keys: kebab-case, each declared once, none another algorithm's (the run config's own keys:
    the check it adds, :func:`check_specs_with`)."""
    taken = {key.name: other for other, spec in ALGORITHMS.items() if other != name for key in spec.keys}
    seen: set[str] = set()
    for key in keys:
        if not isinstance(key, Key) or not re.fullmatch(r"[a-z][a-z0-9-]*", key.name):
            raise ValueError(f"algorithm {name!r}: each key is a stamen.option(name, ...) with a kebab-case name")
        if key.name in seen:
            raise ValueError(f"algorithm {name!r}: key {key.name!r} is declared twice; name it otherwise")
        if key.name in taken:
            raise ValueError(f"algorithm {name!r}: key {key.name!r} is declared by algorithm {taken[key.name]!r}")
        seen.add(key.name)


SpecCheck = Callable[[AlgorithmSpec, str], None]
_SPEC_CHECKS: list[SpecCheck] = []


def check_specs_with(check: SpecCheck) -> None:
    """Have every algorithm spec pass ``check(spec, origin)``, those registered so far and every later one.

    The modules above this one declare what a spec's names must name without this module importing them
    (the contract's imports run one way): the tasks check a spec's ``task``
    (:mod:`stamen.contract.tasks`), the run config that no key of a spec is one of its own
    (:mod:`stamen.contract.run_config`). ``check`` raises a ValueError in one line.
    """
    _SPEC_CHECKS.append(check)
    for _name, spec, origin in ALGORITHMS.entered():
        check(spec, origin)


ALGORITHMS: Registry[AlgorithmSpec] = Registry(
    "algorithm", "stamen.algorithms", register_algorithm, built_in_points=True
)


def algorithm_spec(name: str) -> AlgorithmSpec:
    """The spec of ``name``; ValueError in one line (with a suggestion) if there is none."""
    return ALGORITHMS.lookup(name, "algorithm")


def headline_of(name: str | None) -> Headline:
    """Which model's figures are algorithm ``name``'s headline (:attr:`AlgorithmSpec.headline`); ``global`` for a
    name no spec holds (a run of a plug-in not registered here)."""
    spec = ALGORITHMS.get(name) if name else None
    return spec.headline if spec is not None and spec.headline is not None else Headline.GLOBAL


def admitting(privacy: str) -> tuple[str, ...]:
    """The algorithms that admit a ``privacy`` mode, in registry order."""
    return tuple(name for name, spec in ALGORITHMS.items() if spec.admits(privacy))


def averaging() -> tuple[str, ...]:
    """The algorithms whose aggregate is a weighted average of the clients' weights, in registry order."""
    return tuple(name for name, spec in ALGORITHMS.items() if spec.averages)


def plugin_keys() -> dict[str, Key]:
    """The run-config keys the registered algorithms declare themselves (:attr:`AlgorithmSpec.keys`), by name."""
    return {key.name: key for spec in ALGORITHMS.values() for key in spec.keys}


def algorithm_sections() -> list[tuple[Section, str]]:
    """The sections of the algorithms' keys, each once in registry order (its first declaring algorithm's),
    with that algorithm's name: a spec's ``section``, or for a spec without one a section named after it."""
    sections: dict[str, tuple[Section, str]] = {}
    for name, spec in ALGORITHMS.items():
        if spec.keys:
            section = spec.section if spec.section is not None else Section(name, "")
            sections.setdefault(section.name, (section, name))
    return list(sections.values())
