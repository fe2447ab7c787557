"""The server part of every FL algorithm, loaded by name from the registry in :mod:`contract.algorithms`.

A server part is a module with ``make_strategy(config) -> flwr.serverapp.strategy.Strategy``
(:class:`ServerPart`); the spec's ``server`` names it. Whether the algorithm keeps a global
model (``aggregates``) and everything else the run config checks sit in the spec, so
adding an algorithm's server side is one module and its registry line.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from flwr.serverapp.strategy import Strategy

from contract.algorithms import ALGORITHMS, AlgorithmSpec, algorithm_spec
from contract.run_config import RunConfig


@runtime_checkable
class ServerPart(Protocol):
    """What an algorithm's server module provides."""

    def make_strategy(self, config: RunConfig) -> Strategy: ...


@dataclass(frozen=True)
class ServerAlgorithm:
    """An algorithm's spec with its loaded server part."""

    spec: AlgorithmSpec
    part: ServerPart

    @property
    def AGGREGATES(self) -> bool:  # noqa: N802 - the name the round loop's callers read
        """Whether the server keeps a global model (the spec's ``aggregates``)."""
        return self.spec.aggregates

    def make_strategy(self, config: RunConfig) -> Strategy:
        return self.part.make_strategy(config)


SERVER_ALGORITHMS = ALGORITHMS  # the names the ServerApp accepts: the registry's


def server_algorithm(name: str) -> ServerAlgorithm:
    """The algorithm ``name`` with its server part imported (ValueError in one line if unknown)."""
    spec = algorithm_spec(name)
    part = importlib.import_module(spec.server)
    if not isinstance(part, ServerPart):
        raise TypeError(f"{spec.server} (the server part of {name!r}) has no make_strategy(config)")
    return ServerAlgorithm(spec, part)
