"""FedGTA: personalised confidence-weighted averages over clients with similar label moments (Li et al. 2024)."""

from stamen.contract.algorithms import AlgorithmSpec, Headline
from stamen.contract.keys import Section, ge, gt, option, within

SECTION = Section("fedgta", "FedGTA's options (algorithm='fedgta')", after="local")

SPEC = AlgorithmSpec(
    "fedgta",
    "FedGTA, personalised confidence-weighted averages over clients with similar label moments (Li et al. 2024)",
    "stamen.algorithms.fedgta.server",
    "stamen.algorithms.fedgta.client",
    headline=Headline.CLIENTS,
    resumable=False,
    keys=(
        option("fedgta-prop-steps", 5, "label propagation steps", bound=ge(1)),
        option("fedgta-lp-alpha", 0.5, "label propagation's alpha", bound=within(0, 1)),
        option("fedgta-temperature", 20.0, "softmax temperature of the confidence", bound=gt(0)),
        option("fedgta-moments", 10, "moment orders (raw and central each)", bound=ge(1)),
        option(
            "fedgta-accept",
            0.5,
            "moment cosine similarity above which a client joins another's average",
            bound=within(-1, 1),
        ),
    ),
    section=SECTION,
)
