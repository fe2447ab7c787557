"""Strategies whose messages carry more than the global weights, per node.

Flower's FedAvg gives every message of a round one shared ``RecordDict``; a strategy
that adds records (FedLoG's synthetic nodes, FedProto's prototypes, a personalised
aggregate) gives each message its own copy in :meth:`PerNodeContent.attach`, for the
training and the evaluation messages alike.
"""

from __future__ import annotations

from collections.abc import Iterable

from flwr.app import ArrayRecord, ConfigRecord, Message
from flwr.serverapp import Grid

from stamen.server.averaging import WeightedAverage


class PerNodeContent(WeightedAverage):
    """FedAvg whose training and evaluation messages pass through :meth:`attach`."""

    def attach(self, messages: Iterable[Message]) -> list[Message]:
        """The messages with this strategy's records added (each message its own content)."""
        return list(messages)

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        return self.attach(super().configure_train(server_round, arrays, config, grid))

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        return self.attach(super().configure_evaluate(server_round, arrays, config, grid))
