"""The contract of an unlearning method's server side: what it gets, what it gives back.

A method is an object with a ``name`` and ``run(job) -> MethodResult``; what it needs
is on its registry entry (:data:`stamen.contract.unlearn_methods.UNLEARN_METHOD_SPECS`, read as
:attr:`UnlearningMethod.spec`):

- ``needs_history`` (the spec's ``replays_history``): it replays the clients' updates
  recorded during training (``federaser``); a run records them only when such a method
  is asked for;
- ``needs_holders``: it needs every client that holds data to forget; when one of them
  does not answer the roll call, the server retrains instead (:mod:`stamen.server.unlearning.flow`).

:class:`UnlearningJob` is everything a method may use: the grid and who answered the
roll call, the request (parsed once), the trained weights, the run's strategy, and the
round loop restricted to the clients that stay (:meth:`UnlearningJob.train`). The Flower
run and the in-process experiment hand a method the same job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from logging import INFO
from typing import TYPE_CHECKING, Any, ClassVar

from flwr.app import ArrayRecord, ConfigRecord
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from stamen.contract.requests import Request
from stamen.contract.run_config import RunConfig
from stamen.contract.unlearn_methods import UNLEARN_METHOD_SPECS, UnlearnMethodSpec
from stamen.server.driver import build_driver
from stamen.server.loop import RunHealth
from stamen.server.unlearning.rollcall import SubGrid

if TYPE_CHECKING:
    from stamen.unlearn.federaser import UpdateHistory


@dataclass
class MethodResult:
    """What a method gives back: the unlearned weights and what it reports about itself.

    Attributes:
        arrays: the unlearned global weights.
        info: the method's own figures by phase, JSON-ready (e.g. ``{"wash": {"lambda": ...}}``,
            ``{"laf": {"rounds": 1}, "finetune": {"rounds": 1}}``).
    """

    arrays: ArrayRecord
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class UnlearningJob:
    """One unlearning request on a trained federation, as a method sees it.

    Attributes:
        grid: the run's grid.
        config: the run config (rounds, timeouts, min-clients, local training).
        request: the forgetting request.
        arrays: the trained global weights.
        strategy_factory: the run's algorithm's ``make_strategy``.
        aggregates: whether the algorithm keeps a global model.
        partitions: node id -> partition id of every client that answered the roll call.
        history: the clients' updates recorded in training (``needs_history`` methods), or None.
        initial: the initial weights training started from (None: clients build the seeded ones).
        health: every client failure of the method's rounds and queries.
    """

    grid: Grid
    config: RunConfig
    request: Request
    arrays: ArrayRecord
    strategy_factory: Callable[[RunConfig], Strategy]
    aggregates: bool
    partitions: dict[int, int]
    history: UpdateHistory | None = None
    initial: ArrayRecord | None = None
    health: RunHealth = field(default_factory=RunHealth)

    @property
    def timeout(self) -> float:
        return self.config.round_timeout

    def answering(self) -> list[int]:
        """Node ids of the clients that answered the roll call."""
        return list(self.partitions)

    def staying(self, what: str) -> list[int]:
        """Node ids of the answering clients that stay (a ``client:`` request's client leaves)."""
        leaving = self.request.leaving()
        nodes = [node for node, part in self.partitions.items() if part != leaving]
        if len(nodes) < self.config.min_clients:
            raise RuntimeError(
                f"unlearning: {what} needs min-clients={self.config.min_clients} clients, only {len(nodes)} remain"
            )
        return nodes

    def holders(self) -> list[int]:
        """Node ids of the answering clients that may hold data to forget."""
        holding = set(self.request.holders(len(self.grid.get_node_ids())))
        return [node for node, part in self.partitions.items() if part in holding]

    def train(self, nodes: list[int], rounds: int, flag: str, initial: ArrayRecord | None, what: str) -> ArrayRecord:
        """``rounds`` rounds of the run's strategy on ``nodes`` only, every training message flagged
        ``flag`` (a key of :mod:`stamen.contract.protocol` whose value is the request); returns the weights."""
        config = dataclasses.replace(self.config, min_clients=min(self.config.min_clients, len(nodes)))
        driver = build_driver(
            config, SubGrid(self.grid, nodes), clients=len(nodes), strategy_factory=self.strategy_factory, seeded=False
        )
        return driver.run(
            lambda row: log(INFO, "stamen: %s round %d/%d", what, row["round"], rounds),
            rounds=rounds,
            train_config=ConfigRecord({flag: str(self.request)}),
            initial=initial,
            health=self.health,
        )


class UnlearningMethod:
    """An unlearning method's server side (one module each in :mod:`stamen.server.unlearning`)."""

    name: ClassVar[str]

    @property
    def spec(self) -> UnlearnMethodSpec:
        """The method's registry entry (what it needs, its help)."""
        return UNLEARN_METHOD_SPECS[self.name]

    @property
    def needs_history(self) -> bool:
        return self.spec.replays_history

    @property
    def needs_holders(self) -> bool:
        return self.spec.needs_holders

    def run(self, job: UnlearningJob) -> MethodResult:
        raise NotImplementedError
