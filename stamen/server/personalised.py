r"""Personalised aggregation: each client gets its own weighted average of the clients' models.

A strategy here is Flower's FedAvg with one change: after a round it computes a
row-stochastic mixing matrix :math:`\mathbf{W}` over the round's replies
(:meth:`PersonalisedAverage.mixing`, the algorithm's part) and keeps for each client
:math:`i` the aggregate

.. math::
    \bar{\boldsymbol{\theta}}_i = \sum_j W_{ij}\, \boldsymbol{\theta}_j .

Every later message to that client's node (training, and the final evaluation)
carries :math:`\bar{\boldsymbol{\theta}}_i` in place of the global weights; a node
not yet aggregated for gets the global model. The global model the round loop keeps
(checkpointed, and the one whose names and shapes replies are checked against) is
FedAvg's average weighted by training nodes. The personalised aggregates are server
state outside the checkpoint: these algorithms are not resumable.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from flwr.app import Array, ArrayRecord, Message, MetricRecord, RecordDict

from stamen.contract import protocol as p
from stamen.server.per_node import PerNodeContent


def weighted_average(records: list[ArrayRecord], weights: np.ndarray) -> ArrayRecord:
    """``sum_j weights[j] * records[j]``, array by array (floating arrays keep their dtype)."""
    averaged = {}
    for name in records[0]:
        arrays = [record[name].numpy() for record in records]
        if not np.issubdtype(arrays[0].dtype, np.floating):
            averaged[name] = Array(arrays[0])  # e.g. a counter: not averaged
            continue
        total = sum(float(w) * a.astype(np.float64) for w, a in zip(weights, arrays))
        averaged[name] = Array(np.asarray(total, dtype=arrays[0].dtype))
    return ArrayRecord(averaged)


class PersonalisedAverage(PerNodeContent):
    """FedAvg that sends each client the aggregate of its row of :meth:`mixing` (see the module docstring)."""

    def __init__(self, **strategy) -> None:
        super().__init__(**strategy)
        self.personal: dict[int, ArrayRecord] = {}  # node id -> its aggregate
        self.last_mixing: np.ndarray | None = None  # the latest round's W, rows and columns in reply order

    def mixing(self, contents: list[RecordDict]) -> np.ndarray:
        """The row-stochastic ``(n, n)`` mixing matrix of a round's replies (in order)."""
        raise NotImplementedError

    def attach(self, messages: Iterable[Message]) -> list[Message]:
        messages = list(messages)
        for message in messages:
            node = message.metadata.dst_node_id
            if node in self.personal:
                # FedAvg gives every message one shared RecordDict: this one gets its own
                content = RecordDict(dict(message.content.items()))
                content[p.ARRAYS] = self.personal[node]
                message.content = content
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        replies = [reply for reply in replies if not reply.has_error()]
        if not replies:
            return None, None
        contents = [reply.content for reply in replies]
        records = [content[p.ARRAYS] for content in contents]
        mixing = np.asarray(self.mixing(contents), dtype=np.float64)
        if mixing.shape != (len(records), len(records)) or not np.allclose(mixing.sum(axis=1), 1.0):
            raise ValueError(
                f"round {server_round}: the mixing matrix must be {len(records)}x{len(records)} "
                f"with rows summing to 1, got shape {mixing.shape}"
            )
        self.last_mixing = mixing
        for reply, row in zip(replies, mixing):
            self.personal[reply.metadata.src_node_id] = weighted_average(records, row)
        examples = np.array([float(content[p.METRICS][p.NUM_EXAMPLES]) for content in contents])
        return weighted_average(records, examples / max(examples.sum(), 1.0)), None
