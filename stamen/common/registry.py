"""One registry per kind of plug-in (algorithms, models), filled the same way for Stamen's own and a user's.

A :class:`Registry` maps names to specs. Stamen's built-ins are registered through it as a
researcher's are: its algorithms through the entry points of Stamen's own distribution (their
origin reads :data:`BUILT_IN`); a researcher's come from two places:

- Python, in the process that runs (``stamen.register_algorithm(spec)``): enough for the
  in-process engine, which runs every client in that process;
- package entry points (``[project.entry-points."stamen.algorithms"]`` of an installed
  package, each naming a spec or a list of specs): loaded in every process that reads the
  registry, so that Flower's Ray actors, a Ray cluster's workers and deployed SuperNodes
  know the plug-in too.

Entry points load on the registry's first read, not on import: a plug-in's module may then
import Stamen's contract freely. One that fails to load is left out with one line on
stderr that names it; the rest of Stamen works on. Each entry records where it came from
(:meth:`Registry.origin`), so that an engine whose processes cannot see a Python-only
plug-in refuses it in one line (:func:`check_engine`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from stamen.common.suggest import did_you_mean

S = TypeVar("S")

BUILT_IN = "stamen"  # the origin of Stamen's own entries: the entry points of the distribution named so
PYTHON = "python"  # the origin of an entry registered from Python in this process only


class Registry(Mapping[str, S], Generic[S]):
    """Specs by name; ``kind`` names them in messages (``algorithm``), ``group`` is the entry-point group.

    Args:
        kind: what an entry is, in words.
        group: the entry-point group its plug-ins are found in (``stamen.algorithms``).
        register: the kind's registration function, called for each spec an entry point gives
            (it checks the spec and calls :meth:`add`).
        built_in_points: Stamen's own entries of the kind come from its entry points (the algorithms'): an
            installation whose package metadata holds none of them says so in one line on stderr.
    """

    def __init__(self, kind: str, group: str, register: Callable[..., Any], *, built_in_points: bool = False) -> None:
        self.kind = kind
        self.group = group
        self._register = register
        self._built_in_points = built_in_points
        self._entries: dict[str, S] = {}
        self._origins: dict[str, str] = {}
        self._loaded = False

    def add(self, name: str, spec: S, origin: str) -> None:
        """Enter ``spec`` as ``name``; ValueError in one line if the name is taken by another spec."""
        if name in self._entries and self._entries[name] != spec:
            raise ValueError(
                f"{self.kind} {name!r} is already registered (from {self._origins[name]}); choose another name"
            )
        self._entries[name] = spec
        self._origins.setdefault(name, origin)  # the same spec again keeps where it first came from

    def origin(self, name: str) -> str:
        """Where entry ``name`` came from: :data:`BUILT_IN`, :data:`PYTHON` or ``entry point NAME (DIST)``."""
        self._load()
        return self._origins[name]

    def entered(self) -> list[tuple[str, S, str]]:
        """``(name, spec, origin)`` of each entry entered so far, without loading the entry points: for a check
        that a module declares once it is imported (the entry points it has not seen pass it as they load)."""
        return [(name, spec, self._origins[name]) for name, spec in self._entries.items()]

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True  # first: a plug-in that reads the registry while it loads sees the built-ins
        points = sorted(entry_points(group=self.group), key=lambda point: _package(point) != BUILT_IN)
        for point in points:  # Stamen's own first, in the order of its installed metadata (by name); then the rest
            package = _package(point)
            where = f"entry point {point.name} ({package or 'unknown package'})"
            try:
                loaded = point.load()
                for spec in loaded if isinstance(loaded, (list, tuple)) else (loaded,):
                    self._register(spec, origin=BUILT_IN if package == BUILT_IN else where)
            except Exception as error:  # a broken plug-in is left out, named; every other plug-in and Stamen work on
                message = str(error).splitlines()[0] if str(error) else type(error).__name__
                sys.stderr.write(f"stamen: {self.kind} plug-in {where} is left out: {message}\n")
        if self._built_in_points and BUILT_IN not in self._origins.values():
            sys.stderr.write(
                f"stamen: no {self.kind} of Stamen's own is among the installed entry points of group {self.group!r}; "
                "install Stamen again (in a checkout: pip install -e .)\n"
            )

    def __getitem__(self, name: str) -> S:
        self._load()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def lookup(self, name: str, key: str) -> S:
        """The spec of ``name``; ValueError in one line (with a suggestion) naming ``key`` if there is none."""
        if name not in self:
            raise ValueError(
                f"unknown {key} {name!r}; {key} must be one of: {', '.join(self)}{did_you_mean(name, self)}"
            )
        return self[name]


def _package(point: EntryPoint) -> str:
    """The name of the distribution an entry point comes from (empty: unknown)."""
    return point.dist.name if point.dist is not None else ""


class Helps(Mapping[str, str]):
    """A registry's names with each one's help line, read live: the choices of a run-config key
    (``algorithm``, ``model``) include the plug-ins registered after the key was declared."""

    def __init__(self, registry: Registry[Any]) -> None:
        self._registry = registry

    def __getitem__(self, name: str) -> str:
        return str(self._registry[name].help)

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry)

    def __len__(self) -> int:
        return len(self._registry)

    def __contains__(self, name: object) -> bool:
        return name in self._registry


def check_engine(registries: Mapping[str, tuple[Registry[Any], str]], engine: str) -> None:
    """ValueError in one line when a run on ``engine`` names a plug-in registered from Python only.

    ``registries``: the run-config key (``algorithm``) with its registry and the value the run gives.
    The in-process engine runs every client in this process; every other engine starts processes
    that load plug-ins from entry points alone.
    """
    if engine == "inprocess":
        return
    for key, (registry, name) in registries.items():
        if name in registry and registry.origin(name) == PYTHON:
            raise ValueError(
                f"{key}={name!r} is registered in this process only, and engine {engine!r} runs its clients in other "
                f"processes; use engine 'inprocess', or install the plug-in as a package with an entry point in "
                f"group {registry.group!r} (docs/extending.md)"
            )
