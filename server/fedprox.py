"""FedProx server: Flower's FedProx, which sends ``proximal-mu`` to the clients each round."""

from __future__ import annotations

from flwr.serverapp.strategy import FedProx, Strategy

from contract.run_config import RunConfig
from server.fedavg import strategy_options


def make_strategy(config: RunConfig) -> Strategy:
    return FedProx(
        **strategy_options(config),
        proximal_mu=config.proximal_mu,
    )
