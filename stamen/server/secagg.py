"""Secure aggregation: each round's training exchange runs Flower's SecAgg+ workflow.

SecAgg+ (Bell, Bonawitz, Gascón, Lepoint, Raykova, "Secure Single-Server Aggregation
with (Poly)Logarithmic Overhead", ACM CCS 2020), the sparse-graph version of SecAgg
(Bonawitz, Ivanov, Kreuter, Marcedone, McMahan, Patel, Ramage, Segal, Seth, "Practical
Secure Aggregation for Privacy-Preserving Machine Learning", ACM CCS 2017), as Flower
1.42's ``flwr.server.workflow.SecAggPlusWorkflow`` implements it.

Math. Client ``i`` of the round's ``n`` clients has weights ``w_i`` and weight
``r_i = n_i / W`` (``n_i`` training nodes, ``W`` = ``secagg-max-weight``); ``q_i =
round(r_i R)``, ``R = 2^22`` levels, ``c = 8`` the clipping range. It sends (see
:mod:`stamen.client.secagg`) ``y_i = [q_i, Q(q_i/R w_i)] + PRG(b_i) + sum_{j in N(i)} ±PRG(s_ij)
mod M``, ``M = 2^32``, where ``N(i)`` are its ``k`` neighbours (``k = secagg-shares x n``,
a ring after a seeded shuffle), ``s_ij = s_ji`` their agreed keys (the sign flips with
``i < j``) and ``b_i`` its own mask seed. Each client Shamir-shares ``b_i`` and its key
``sk_i`` among ``N(i)``, any ``t = secagg-threshold x k`` shares rebuilding them. Over the
clients ``A`` whose ``y_i`` arrived, the pairwise masks cancel in ``sum_{i in A} y_i``
except those with dropped neighbours ``D``; the server asks each survivor for shares of
``b_i`` (``i`` in ``A``) or of ``sk_j`` (``j`` in ``D``), never both for one client,
rebuilds them, removes ``PRG(b_i)`` and the dropped clients' pairwise masks, and holds
``sum_A q_i`` and ``sum_A Q(q_i/R w_i)``; dequantised,

    w = sum_A (q_i/R) w_i / sum_A (q_i/R) + e,   |e| <= |A| (2c/R) / sum_A (q_i/R)

per weight: FedAvg's average weighted by training nodes (up to ``q_i``'s rounding,
relative ``1/(2 r_i R)``), within one quantisation step per client. No single ``y_i``
tells the server anything about ``w_i``: it is uniform mod ``M`` given the others.

Route. The workflow is legacy API (a ``LegacyContext`` with a legacy strategy, the
``fitres.*`` record layout), Stamen's app is Message API with its own round loop. The
workflow needs of its grid only ``send_and_receive``, so it is driven as it is, one
workflow call per round, by :class:`SecureAggregationGrid`: the round loop's grid, whose
training exchange becomes the four stages. The loop's own training messages travel in
the ``collect_masked_vectors`` stage, with the stage's config added, so the replies
answer them; a relay strategy (:class:`_Relay`) names the loop's sampled nodes to the
workflow and takes its aggregate. Each valid reply then comes back to the loop with its
metrics and, as its weights, the aggregate (the workflow's own trick for legacy
strategies): the loop's strategy averages equal arrays to the aggregate, and never sees
one client's weights. Metrics (counts, loss, accuracy) travel in the clear.

A client lost before ``collect_masked_vectors`` is missing from the round (the loop
counts it ``lost``); one lost after it is in the aggregate (its shares rebuild its
mask). When fewer than ``t`` of a client's neighbours remain, the workflow halts and
the round fails (:class:`TooFewClientsError`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from logging import WARNING
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.common import FitIns, FitRes, Parameters, log, parameters_to_ndarrays
from flwr.server import LegacyContext
from flwr.server.strategy import Strategy as LegacyStrategy
from flwr.server.workflow import SecAggPlusWorkflow

from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.server.loop import TooFewClientsError
from stamen.server.transport import send_and_receive

# Flower 1.42's names for what the workflow reads and writes: the SecAgg+ messages' config record, its stage key and
# the stage that carries the masked vectors (flwr.common.secure_aggregation.secaggplus_constants), and the legacy
# workflows' state records (flwr.server.workflow.constant). Not public API, so written here;
# tests/test_flower_internals.py checks that they equal Flower's.
RECORD_KEY_CONFIGS = "secaggplus_configs"
STAGE_KEY = "stage"
COLLECT_MASKED_VECTORS = "collect_masked_vectors"
MAIN_PARAMS_RECORD, MAIN_CONFIGS_RECORD, CURRENT_ROUND_KEY = "parameters", "config", "current_round"

# Records of a reply that belong to the protocol, not to Stamen's round.
_PROTOCOL_RECORDS = frozenset(
    {RECORD_KEY_CONFIGS, p.SECAGG_LAYOUT, "fitres.parameters", "fitres.num_examples", "fitres.metrics", "fitres.status"}
)


@dataclass
class StageExchange:
    """One stage of one round: the nodes asked, the replies (errors included) and, per node, the
    content of its valid reply as the server received it (the masked vector in ``collect_masked_vectors``)."""

    stage: str
    sent: list[int]
    replies: list[Message] = field(default_factory=list)
    received: dict[int, RecordDict] = field(default_factory=dict)

    @property
    def answered(self) -> list[int]:
        return [reply.metadata.src_node_id for reply in self.replies if not reply.has_error()]


class SecureAggregationGrid:
    """The round loop's grid with each training exchange run as SecAgg+ (other messages pass through).

    ``stages`` holds the last round's exchanges, stage by stage (what the server saw).
    """

    def __init__(self, grid: Any, config: RunConfig) -> None:
        self.grid = grid
        self.seed = config.seed
        self.workflow = SecAggPlusWorkflow(
            num_shares=config.secagg_shares,
            reconstruction_threshold=config.secagg_threshold,
            max_weight=config.secagg_max_weight,
        )
        self.stages: list[StageExchange] = []

    def get_node_ids(self) -> Iterable[int]:
        return self.grid.get_node_ids()

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> list[Message]:
        messages = list(messages)
        training = [message.metadata.message_type == MessageType.TRAIN for message in messages]
        if not any(training):
            return send_and_receive(self.grid, messages, timeout)
        if not all(training):
            raise ValueError("secure aggregation: a training exchange cannot carry other messages")
        return self._secure_round(messages, timeout)

    def _secure_round(self, messages: list[Message], timeout: float | None) -> list[Message]:
        config = messages[0].content.get(p.CONFIG)
        server_round = int(config.get(p.SERVER_ROUND, 0)) if isinstance(config, ConfigRecord) else 0
        training = {message.metadata.dst_node_id: message for message in messages}
        relay = _Relay(list(training))
        state = RecordDict(
            {
                MAIN_PARAMS_RECORD: ArrayRecord(),
                MAIN_CONFIGS_RECORD: ConfigRecord({CURRENT_ROUND_KEY: server_round}),
            }
        )
        context = LegacyContext(Context(0, 0, {}, state, {}), strategy=relay)
        driver = _StageGrid(self.grid, training, timeout)
        saved = random.getstate()  # the workflow shuffles the clients with Python's random: keep the sampler's
        random.seed(self.seed * 1_000_003 + server_round)
        try:
            self.workflow(driver, context)
        finally:
            random.setstate(saved)
        self.stages = driver.stages
        for exchange in driver.stages:
            for reply in exchange.replies:
                if reply.has_error() and exchange.stage != COLLECT_MASKED_VECTORS:
                    log(WARNING, "round %d: SecAgg+ %s: node %d failed: %s", server_round, exchange.stage,
                        reply.metadata.src_node_id, reply.error.reason)  # fmt: skip
        if relay.aggregate is None:
            raise TooFewClientsError(f"round {server_round}: {_halted(driver.stages, len(messages), self.workflow)}")
        masked = next(exchange for exchange in driver.stages if exchange.stage == COLLECT_MASKED_VECTORS)
        return [_with_aggregate(reply, relay.aggregate) for reply in masked.replies]


class _StageGrid:
    """The workflow's grid: sends each stage, the loop's training messages in ``collect_masked_vectors``."""

    def __init__(self, grid: Any, training: dict[int, Message], timeout: float | None) -> None:
        self.grid, self.training, self.timeout = grid, training, timeout
        self.stages: list[StageExchange] = []

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> list[Message]:
        outgoing = [self._outgoing(message) for message in messages]
        if not outgoing:
            return []
        stage = str(messages_stage(outgoing[0]))
        replies = send_and_receive(self.grid, outgoing, self.timeout)
        received = {reply.metadata.src_node_id: reply.content for reply in replies if not reply.has_error()}
        self.stages.append(StageExchange(stage, [m.metadata.dst_node_id for m in outgoing], replies, received))
        return replies

    def _outgoing(self, message: Message) -> Message:
        """A message of its own per node (the workflow shares one content among all in ``setup``)."""
        node = message.metadata.dst_node_id
        protocol = ConfigRecord(dict(message.content.config_records[RECORD_KEY_CONFIGS]))
        if protocol.get(STAGE_KEY) == COLLECT_MASKED_VECTORS:
            training = self.training[node]  # strategies share one content among their messages: copy it
            training.content = RecordDict({**dict(training.content.items()), RECORD_KEY_CONFIGS: protocol})
            return training
        return Message(
            content=RecordDict({RECORD_KEY_CONFIGS: protocol}),
            dst_node_id=node,
            message_type=MessageType.TRAIN,
            group_id=message.metadata.group_id,
        )


def messages_stage(message: Message) -> str:
    """The SecAgg+ stage a protocol message asks for."""
    return str(message.content.config_records[RECORD_KEY_CONFIGS][STAGE_KEY])


def _with_aggregate(reply: Message, aggregate: list[np.ndarray]) -> Message:
    """A masked-vector reply as the round loop reads it: its own records, the aggregate as its weights."""
    if reply.has_error():
        return reply
    layout = reply.content.config_records[p.SECAGG_LAYOUT]
    names, dtypes = list(layout[p.SECAGG_NAMES]), list(layout[p.SECAGG_DTYPES])  # type: ignore[arg-type]
    if len(names) != len(aggregate):
        raise RuntimeError(f"secure aggregation: {len(aggregate)} aggregated arrays for {len(names)} weight names")
    arrays = ArrayRecord(
        array_dict={
            str(name): Array(np.asarray(value).astype(str(dtype)))
            for name, dtype, value in zip(names, dtypes, aggregate, strict=True)
        }
    )
    content = RecordDict({key: record for key, record in reply.content.items() if key not in _PROTOCOL_RECORDS})
    content[p.ARRAYS] = arrays
    reply.content = content
    return reply


def _halted(stages: list[StageExchange], sampled: int, workflow: SecAggPlusWorkflow) -> str:
    """Why the workflow stopped, in one line."""
    last = stages[-1] if stages else None
    where = f"after its {last.stage!r} stage, {len(last.answered)} of {sampled} clients answered" if last else ""
    return (
        f"secure aggregation halted {where}: too few for SecAgg+ to unmask "
        f"(secagg-threshold={workflow.reconstruction_threshold:g} of secagg-shares={workflow.num_shares:g}, "
        "at least 2 clients); lower secagg-threshold or raise min-clients"
    )


class _Node:
    """A sampled node as the legacy workflow names it: it reads ``node_id`` only, and no calls go through it
    (Flower's ``ClientProxy``, whose role this plays, is not public API)."""

    def __init__(self, node_id: int) -> None:
        self.cid = str(node_id)
        self.properties: dict = {}
        self.node_id = node_id


class _Relay(LegacyStrategy):
    """The legacy strategy the workflow calls: it samples the loop's nodes and keeps the aggregate."""

    def __init__(self, nodes: list[int]) -> None:
        self.nodes = nodes
        self.aggregate: list[np.ndarray] | None = None

    def initialize_parameters(self, client_manager: Any) -> None:
        return None

    def configure_fit(self, server_round: int, parameters: Parameters, client_manager: Any) -> list:
        return [(_Node(node), FitIns(Parameters(tensors=[], tensor_type=""), {})) for node in self.nodes]

    def aggregate_fit(
        self, server_round: int, results: list[tuple[_Node, FitRes]], failures: list
    ) -> tuple[None, dict]:
        if results:  # every result carries the unmasked aggregate
            self.aggregate = parameters_to_ndarrays(results[0][1].parameters)
        return None, {}

    def configure_evaluate(self, server_round: int, parameters: Parameters, client_manager: Any) -> list:
        return []

    def aggregate_evaluate(self, server_round: int, results: list, failures: list) -> tuple[None, dict]:
        return None, {}

    def evaluate(self, server_round: int, parameters: Parameters) -> None:
        return None
