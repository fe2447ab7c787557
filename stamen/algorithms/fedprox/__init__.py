"""FedProx: FedAvg with a proximal term around the global model (Li et al. 2020)."""

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.keys import Section, ge, option
from stamen.contract.tasks import ONE_LOCAL_STEP

SECTION = Section("fedprox", "FedProx's options (algorithm='fedprox')", after="local")

SPEC = AlgorithmSpec(
    "fedprox",
    "FedProx, FedAvg with a proximal term around the global model",
    "stamen.algorithms.fedprox.server",
    "stamen.algorithms.fedprox.client",
    privacy=("none", "client-dp"),
    averages=True,
    unlearnable=True,
    any_task=True,
    equals="fedavg",
    equals_when=(
        ("proximal-mu", 0.0, "its proximal term is zero"),
        (
            ONE_LOCAL_STEP,
            True,
            "the proximal term's gradient is zero at the received weights, where that step is taken",
        ),
    ),
    keys=(option("proximal-mu", 0.01, "FedProx's proximal strength", bound=ge(0)),),
    section=SECTION,
)
