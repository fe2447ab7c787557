r"""FedSage server: FedAvg of the clients' node classifiers (each trained on its mended subgraph).

Zhang, Yang, Li, Sun and Yiu, *Subgraph Federated Learning with Missing Neighbor
Generation*, NeurIPS 2021. The server of FedSage is FedAvg,
:math:`\boldsymbol{\theta} = \sum_i \frac{n_i}{n} \boldsymbol{\theta}_i` over the
classifiers' weights (:math:`n_i` training nodes); the generators stay with their
clients (:mod:`client.fedsage`), so no generated or real feature reaches the server.
"""

from __future__ import annotations

from flwr.serverapp.strategy import Strategy

from contract.run_config import RunConfig
from server.averaging import WeightedAverage
from server.fedavg import strategy_options


def make_strategy(config: RunConfig) -> Strategy:
    return WeightedAverage(**strategy_options(config))
