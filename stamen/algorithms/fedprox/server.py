"""FedProx server: Flower's FedProx, which sends ``proximal-mu`` to the clients each round."""

from __future__ import annotations

from flwr.serverapp.strategy import FedProx, Strategy

from stamen.contract.run_config import RunConfig
from stamen.server.averaging import WeightedAverage
from stamen.server.strategy_options import strategy_options


class WeightedFedProx(FedProx, WeightedAverage):
    """Flower's FedProx, its replies averaged by :func:`stamen.server.averaging.average_records`."""


def make_strategy(config: RunConfig) -> Strategy:
    return WeightedFedProx(
        **strategy_options(config),
        proximal_mu=config.option("proximal-mu"),
    )
