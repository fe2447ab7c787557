r"""FedSage's server parts: ``fedsage-local`` (:func:`make_strategy`) and ``fedsage+`` (:func:`make_plus_strategy`).

Zhang, Yang, Li, Sun and Yiu, *Subgraph Federated Learning with Missing Neighbor
Generation*, NeurIPS 2021 (the math: :mod:`stamen.algorithms.fedsage.model`; the client parts:
:mod:`stamen.algorithms.fedsage.client`).

**fedsage-local**: the server is FedAvg,
:math:`\boldsymbol{\theta} = \sum_i \frac{n_i}{n} \boldsymbol{\theta}_i` over the
classifiers' weights (:math:`n_i` training nodes); the generators stay with their
clients, so no generated or real feature reaches the server.

**fedsage+**: federated NeighGen training and the same FedAvg of the clients' mended
classifiers. The strategy drives ``fedsage-gen-rounds`` (:math:`T`) federated generator
steps over every connected client, with query messages (the ``FEDSAGE_*`` names of
:mod:`stamen.contract.protocol`) through the run's grid, so the phase runs on every transport
without a hook in the round loop. When, is ``fedsage-schedule``
(:class:`~stamen.algorithms.fedsage.FedSageSchedule`):

- ``paper`` (the default): step :math:`t` just before the classifier's round :math:`t`,
  for :math:`t \le T` (default 10 of the run's 100 rounds), each client's classifier
  mending its graph with its generator as of that step; from round :math:`T` on the
  generator is fixed. This is the reference code's schedule (OpenFGL's FedSage+, its
  ``gen_rounds`` = 10 of the rounds; the authors' own code, github zkhku/fedsage, takes
  20 federated generator epochs beside 20 classifier rounds): a few generator steps
  within the run, not a long phase before it;
- ``pretrain``: all :math:`T` steps before the classifier's first round (with
  ``fedsage-gen-rounds=100``, Stamen's earlier schedule; wall times of both:
  benchmarks/fedsage-schedule.md).

A step's messages:

1. ``start`` to every client: each replies its step-1 request
   :math:`(\{\mathbf{h}_v, k_v\}_{v \in A_i}, \boldsymbol{\theta}^f_i)`;
2. for :math:`t = 1..T`: ``cross`` to every client :math:`j` with the other clients'
   requests; :math:`j` replies the parts of :math:`\mathbf{g}_{i,j} = \nabla_{\boldsymbol{\theta}^f_i}
   \mathcal{L}^{i,j}_f` for each :math:`i \neq j` (:mod:`stamen.algorithms.fedsage.cross`); then ``step`` to
   every client :math:`i` with the parts summed over :math:`j \neq i` (in partition order; the
   sparse rows named in ``FEDSAGE_CONCATENATED`` concatenated), which :math:`i` completes to
   :math:`\mathbf{G}_i = \sum_{j \neq i} \mathbf{g}_{i,j}`; :math:`i` takes its Adam step and
   replies step :math:`t+1`'s request (nothing after step :math:`T`).

The server sees fGen's weights and inputs and the gradients' parts, never a node's
features. With ``fedsage-cross-weight=0`` the ``cross`` hop is skipped (each client
steps on its local loss alone: local NeighGen), and with ``fedsage-gen-rounds=0``
there is no phase (clients train locally, as ``fedsage-local``).
A client failing a hop leaves the phase (it trains its generator locally when it first
needs one); the phase needs ``min-clients`` valid replies at every hop, like a round.
Then the classifier's rounds are FedAvg, as ``fedsage-local``'s.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from logging import INFO

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, RecordDict
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from stamen.algorithms.fedsage import FedSageSchedule
from stamen.algorithms.fedsage import messages as wire
from stamen.contract import protocol as p
from stamen.contract.arrays import array_values, numpy_array
from stamen.contract.run_config import RunConfig
from stamen.server.averaging import WeightedAverage
from stamen.server.loop import ReportsHealth, RunHealth, exchange
from stamen.server.strategy_options import strategy_options

WAIT_SECONDS = 1.0  # between looks for connected nodes


def _query(node: int, kind: str, step: int, records: dict[str, ArrayRecord], last: bool = False) -> Message:
    config = ConfigRecord({p.QUERY: kind, wire.FEDSAGE_STEP: step, wire.FEDSAGE_LAST: last})
    return Message(content=RecordDict({p.CONFIG: config, **records}), dst_node_id=node, message_type=MessageType.QUERY)


def _partition(reply: Message) -> int:
    return int(reply.content[p.METRICS][p.PARTITION_ID])


def _mean(replies: list[Message], key: str) -> float:
    values = [float(reply.content[p.METRICS][key]) for reply in replies if key in reply.content[p.METRICS]]
    return sum(values) / len(values) if values else float("nan")


@dataclass(frozen=True)
class PhaseSettings:
    """The generator phase's run-config values."""

    rounds: int  # fedsage-gen-rounds
    cross_weight: float  # fedsage-cross-weight
    schedule: FedSageSchedule  # fedsage-schedule
    timeout: float  # round-timeout, per hop
    min_clients: int  # min-clients, per hop


class GeneratorPhase:
    """The federated generator steps over the clients that answered ``start`` (see the module docstring)."""

    def __init__(self, grid: Grid, settings: PhaseSettings, health: RunHealth | None = None) -> None:
        self.grid, self.rounds, self.cross_weight, self.health = grid, settings.rounds, settings.cross_weight, health
        self.timeout, self.min_clients = settings.timeout, settings.min_clients
        self.cross_loss = float("nan")  # the last cross hop's mean over clients (logged)
        self.replies: list[Message] = []  # the last hop's replies: the next step's requests
        self.steps_taken = 0

    def _exchange(self, messages: Iterable[Message], what: str) -> list[Message]:
        return exchange(
            self.grid, messages, self.timeout, self.min_clients, f"fedsage+ generator {what}", health=self.health
        )

    def run(self) -> None:
        """Every step at once (``pretrain``)."""
        self.start()
        for step in range(1, self.rounds + 1):
            self.step(step)

    def start(self) -> None:
        """Wait for ``min-clients`` nodes; each builds its generator and replies step 1's request."""
        while len(nodes := sorted(self.grid.get_node_ids())) < self.min_clients:
            log(INFO, "stamen: fedsage+ waits for clients: %d connected, %d needed", len(nodes), self.min_clients)
            time.sleep(WAIT_SECONDS)
        self.replies = self._exchange([_query(node, wire.FEDSAGE_START_QUERY, 1, {}) for node in nodes], "start")
        self.steps_taken = 0

    def step(self, step: int) -> None:
        """Generator step ``step`` (1..rounds) over the clients that replied the step before."""
        replies = self.replies
        nodes_of = {_partition(reply): reply.metadata.src_node_id for reply in replies}
        requests = {_partition(reply): reply.content[wire.FEDSAGE_REQUEST] for reply in replies}
        summed = self._cross(nodes_of, requests, step) if self.cross_weight > 0 and len(requests) > 1 else {}
        last = step == self.rounds
        messages = [
            _query(
                node, wire.FEDSAGE_STEP_QUERY, step, {wire.FEDSAGE_GRADIENTS: summed[i]} if i in summed else {}, last
            )
            for i, node in sorted(nodes_of.items())
        ]
        stepped = self._exchange(messages, f"step {step}/{self.rounds}")
        if step % max(1, self.rounds // 10) == 0 or last:
            cross = f", cross loss {self.cross_loss:.4f}" if summed else ""
            log(
                INFO,
                "stamen: fedsage+ generator step %d/%d: clients %d, local loss d %.4f f %.4f%s",
                step, self.rounds, len(replies),
                _mean(replies, wire.FEDSAGE_LOSS_D), _mean(replies, wire.FEDSAGE_LOSS_F), cross,
            )  # fmt: skip
        self.replies = stepped
        self.steps_taken = step

    def _cross(self, nodes_of: dict[int, int], requests: dict[int, ArrayRecord], step: int) -> dict[int, ArrayRecord]:
        """Each client's requests to every other one; the gradients they return, summed per requesting client."""
        messages = []
        for j, node in sorted(nodes_of.items()):
            others = {f"{i}/{k}": a for i, record in sorted(requests.items()) if i != j for k, a in record.items()}
            messages.append(_query(node, wire.FEDSAGE_CROSS_QUERY, step, {wire.FEDSAGE_REQUESTS: ArrayRecord(others)}))
        replies = sorted(self._exchange(messages, f"cross {step}/{self.rounds}"), key=_partition)
        self.cross_loss = _mean(replies, wire.FEDSAGE_CROSS_LOSS)
        sums: dict[int, dict[str, np.ndarray]] = {}
        rows: dict[int, dict[str, list[np.ndarray]]] = {}
        for reply in replies:  # partition order: the sums come out the same every time
            for key, array in reply.content[wire.FEDSAGE_GRADIENTS].items():
                i, name = key.split("/", 1)
                values = array_values(array, writable=False)
                if name in wire.FEDSAGE_CONCATENATED:
                    rows.setdefault(int(i), {}).setdefault(name, []).append(values)
                    continue
                total = sums.setdefault(int(i), {})
                if name in total:
                    total[name] += values
                else:
                    total[name] = values.copy()
        for i, named in rows.items():
            sums.setdefault(i, {}).update({name: np.concatenate(parts) for name, parts in named.items()})
        return {i: ArrayRecord({k: numpy_array(v) for k, v in total.items()}) for i, total in sums.items()}


class FedSagePlus(WeightedAverage, ReportsHealth):
    """Flower's FedAvg whose ``configure_train`` first takes the generator steps the schedule puts
    there (their client failures count in the run's health, as a round's do)."""

    def __init__(self, phase: PhaseSettings, **strategy) -> None:
        super().__init__(**strategy)
        self.phase = phase
        self.generator: GeneratorPhase | None = None  # the phase, once started
        self.step_rounds: list[int] = []  # the classifier round before which each step was taken (in order)

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        if self.phase.rounds > 0 and self.generator is None:
            self.generator = GeneratorPhase(grid, self.phase, self.health)
            self.generator.start()
        if self.generator is not None:
            if self.phase.schedule == FedSageSchedule.PRETRAIN:
                steps = range(self.generator.steps_taken + 1, self.phase.rounds + 1)
            else:  # paper: one step before each of the first rounds
                steps = range(self.generator.steps_taken + 1, min(server_round, self.phase.rounds) + 1)
            for step in steps:
                self.generator.step(step)
                self.step_rounds.append(server_round)
        return super().configure_train(server_round, arrays, config, grid)


def make_strategy(config: RunConfig) -> Strategy:
    """fedsage-local: FedAvg of the classifiers."""
    return WeightedAverage(**strategy_options(config))


def make_plus_strategy(config: RunConfig) -> Strategy:
    """fedsage+: the generator phase, then FedAvg of the classifiers."""
    phase = PhaseSettings(
        config.option("fedsage-gen-rounds"),
        config.option("fedsage-cross-weight"),
        FedSageSchedule(config.option("fedsage-schedule")),
        config.round_timeout,
        config.min_clients,
    )
    return FedSagePlus(phase, **strategy_options(config))
