"""FedProx server: Flower's FedProx, which sends ``proximal-mu`` to the clients each round."""

from __future__ import annotations

from flwr.serverapp.strategy import FedProx, Strategy

from models import protocol as p
from models.run_config import RunConfig

AGGREGATES = True


def make_strategy(config: RunConfig) -> Strategy:
    return FedProx(
        fraction_train=config.fraction_train,
        min_train_nodes=config.min_clients,
        min_evaluate_nodes=config.min_clients,
        min_available_nodes=config.min_clients,
        weighted_by_key=p.NUM_EXAMPLES,
        arrayrecord_key=p.ARRAYS,
        configrecord_key=p.CONFIG,
        proximal_mu=config.proximal_mu,
    )
