"""FedAvgM: FedAvg with server momentum (Hsu et al. 2019; Flower's FedAvgM)."""

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.keys import Section, gt, option, within

SECTION = Section("fedavgm", "FedAvgM's options (algorithm='fedavgm', Flower's FedAvgM)", after="local")

# The defaults as tuned by `stamen tune` on Cora and csbm (benchmarks/tuning.md): Hsu et al.'s 0.9 with a server
# learning rate of 1 (an effective step of 10 averaged updates) diverged on both
SPEC = AlgorithmSpec(
    "fedavgm",
    "FedAvgM, FedAvg with server momentum (Flower's FedAvgM)",
    "stamen.algorithms.fedavgm.server",
    "stamen.algorithms.fedavgm.client",
    privacy=("none", "dp-sgd"),
    resumable=False,
    averages=True,
    unlearnable=True,
    any_task=True,
    keys=(
        option(
            "server-momentum",
            0.5,
            "server momentum beta (0.0, Flower's default, is plain FedAvg)",
            bound=within(0, 1, "[)"),
        ),
        option("server-learning-rate", 0.3, "server learning rate on the averaged update", bound=gt(0)),
    ),
    section=SECTION,
)
