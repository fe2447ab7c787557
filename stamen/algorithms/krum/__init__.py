"""Krum, Multi-Krum and Bulyan: Byzantine-robust selection of the clients' replies (Blanchard et al. 2017,
El Mhamdi et al. 2018; Flower's Krum, MultiKrum, Bulyan). The three share this folder and its keys."""

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.keys import Section, ge, option

ROBUST = Section(
    "robust", "robust aggregation (algorithm='fedtrimmedavg', 'krum', 'multikrum', 'bulyan')", after="local"
)  # shared with fedtrimmedavg's key

KRUM = AlgorithmSpec(
    "krum",
    "Krum, the one reply closest to its neighbours (Flower's Krum)",
    "stamen.algorithms.krum.server:make_krum",
    "stamen.algorithms.krum.client",
    privacy=("none", "dp-sgd"),
    unlearnable=True,
    least_clients=(2, 3),
    any_task=True,
    keys=(
        option(
            "num-malicious-nodes",
            1,
            "krum, multikrum, bulyan: f, the malicious clients to tolerate (Flower's default 0)",
            bound=ge(0),
        ),
    ),
    section=ROBUST,
)
MULTIKRUM = AlgorithmSpec(
    "multikrum",
    "Multi-Krum, the average of the replies Krum scores best (Flower's MultiKrum)",
    "stamen.algorithms.krum.server:make_multikrum",
    "stamen.algorithms.krum.client",
    privacy=("none", "dp-sgd"),
    options=("num-malicious-nodes",),
    unlearnable=True,
    least_clients=(2, 3),
    any_task=True,
    keys=(
        option(
            "num-nodes-to-select",
            0,
            "multikrum: replies averaged (0: all but num-malicious-nodes; Flower's default 1)",
            bound=ge(0),
        ),
    ),
    section=ROBUST,
)
BULYAN = AlgorithmSpec(
    "bulyan",
    "Bulyan, Krum selection then a trimmed mean around the median (Flower's Bulyan)",
    "stamen.algorithms.krum.server:make_bulyan",
    "stamen.algorithms.krum.client",
    privacy=("none", "dp-sgd"),
    options=("num-malicious-nodes",),
    unlearnable=True,
    least_clients=(4, 3),
    any_task=True,
)
