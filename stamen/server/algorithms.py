"""The server part of every FL algorithm, loaded by name from the registry in :mod:`stamen.contract.algorithms`.

A server part is a factory ``make_strategy(config) -> flwr.serverapp.strategy.Strategy``;
the spec's ``server`` names its module (``make_strategy`` in it) or ``module:function``.
Whether the algorithm keeps a global model (``aggregates``), how many replies its rule
needs (``least_clients``) and everything else the run config checks sit in the spec, so
adding an algorithm's server side is one module and its registry line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flwr.serverapp.strategy import Strategy

from stamen.contract.algorithms import ALGORITHMS, AlgorithmSpec, algorithm_spec, import_part
from stamen.contract.run_config import RunConfig


@dataclass(frozen=True)
class ServerAlgorithm:
    """An algorithm's spec with its loaded strategy factory."""

    spec: AlgorithmSpec
    factory: Callable[[RunConfig], Strategy]

    @property
    def AGGREGATES(self) -> bool:  # the name the round loop's callers read
        """Whether the server keeps a global model (the spec's ``aggregates``)."""
        return self.spec.aggregates

    def make_strategy(self, config: RunConfig) -> Strategy:
        return self.factory(config)

    def check_federation(self, config: RunConfig, num_clients: int) -> None:
        """Before a run: the rule gets enough of ``num_clients`` in each round's sample (one-line ValueError).

        The sample is Flower's (:func:`stamen.server.privacy.sampled_clients`); a rule with too few
        replies refuses them in round 1 anyway, this only says so before anything starts.
        """
        # on use: numpy stays out of this module's import
        from stamen.server.privacy import sampled_clients

        sampled = sampled_clients(config, num_clients)
        if self.spec.least_clients is not None:  # a Byzantine-robust rule: it reads num-malicious-nodes
            require_replies(self.spec, config.option("num-malicious-nodes"), sampled, "sampled")
        if "num-nodes-to-select" not in self.spec.options:
            return
        select = config.option("num-nodes-to-select")
        if select > sampled:
            raise ValueError(
                f"{self.spec.name} selects num-nodes-to-select={select} of {sampled} sampled clients; "
                "lower num-nodes-to-select (0: all but num-malicious-nodes)"
            )


def require_replies(spec: AlgorithmSpec, malicious: int, count: int, what: str) -> None:
    """ValueError in one line when ``count`` replies are fewer than ``spec``'s rule needs (``least_clients``)."""
    if spec.least_clients is not None and count < spec.least_replies(malicious):
        factor, constant = spec.least_clients
        raise ValueError(
            f"{spec.name} with num-malicious-nodes={malicious} needs at least {factor}f+{constant} = "
            f"{spec.least_replies(malicious)} clients per round, {what} {count}; "
            "lower num-malicious-nodes or use more clients"
        )


SERVER_ALGORITHMS = ALGORITHMS  # the names the ServerApp accepts: the registry's


def server_algorithm(name: str) -> ServerAlgorithm:
    """The algorithm ``name`` with its strategy factory imported (ValueError in one line if unknown)."""
    spec = algorithm_spec(name)
    module, _, function = spec.server.partition(":")
    factory = getattr(import_part(module, spec.server, "server", name), function or "make_strategy", None)
    if not callable(factory):
        raise ValueError(f"{spec.server} (the server part of {name!r}) names no make_strategy(config) factory")
    return ServerAlgorithm(spec, factory)
