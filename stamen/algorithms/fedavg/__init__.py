"""FedAvg: the clients' weights averaged by training nodes (McMahan et al. 2017)."""

from stamen.contract.algorithms import AlgorithmSpec

SPEC = AlgorithmSpec(
    "fedavg",
    "FedAvg, the clients' weights averaged by training nodes",
    "stamen.algorithms.fedavg.server",
    "stamen.algorithms.fedavg.client",
    privacy=("none", "dp-sgd", "client-dp"),
    averages=True,
    unlearnable=True,
    any_task=True,
)
