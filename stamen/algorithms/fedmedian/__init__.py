"""FedMedian and FedTrimmedAvg: coordinate-wise median and trimmed mean of the clients' weights (Yin et al. 2018;
Flower's FedMedian, FedTrimmedAvg). The two share this folder."""

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.keys import Section, option, within

ROBUST = Section(
    "robust", "robust aggregation (algorithm='fedtrimmedavg', 'krum', 'multikrum', 'bulyan')", after="local"
)  # shared with krum's keys

FEDMEDIAN = AlgorithmSpec(
    "fedmedian",
    "coordinate-wise median of the clients' weights (Flower's FedMedian)",
    "stamen.algorithms.fedmedian.server:make_median",
    "stamen.algorithms.fedmedian.client",
    privacy=("none", "dp-sgd"),
    unlearnable=True,
    any_task=True,
)
FEDTRIMMEDAVG = AlgorithmSpec(
    "fedtrimmedavg",
    "coordinate-wise trimmed mean of the clients' weights (Flower's FedTrimmedAvg)",
    "stamen.algorithms.fedmedian.server:make_trimmed_mean",
    "stamen.algorithms.fedmedian.client",
    privacy=("none", "dp-sgd"),
    unlearnable=True,
    any_task=True,
    keys=(
        option(
            "trimmed-beta",
            0.2,
            "fedtrimmedavg: share of clients dropped at each end, per coordinate",
            bound=within(0, 0.5, "[)"),
        ),
    ),
    section=ROBUST,
)
