"""FedAvg's server part: Flower's FedAvg, weighted by each client's training nodes (:mod:`stamen.server.averaging`)."""

from __future__ import annotations

from flwr.serverapp.strategy import Strategy

from stamen.contract.run_config import RunConfig
from stamen.server.strategy_options import weighted_average


def make_strategy(config: RunConfig) -> Strategy:
    return weighted_average(config)
