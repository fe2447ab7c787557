"""FED-PUB: personalised aggregates by functional similarity, personal sparse masks (Baek et al. 2023)."""

from stamen.contract.algorithms import AlgorithmSpec, Headline
from stamen.contract.keys import Section, ge, option

SECTION = Section("fedpub", "FED-PUB's options (algorithm='fedpub')", after="local")

SPEC = AlgorithmSpec(
    "fedpub",
    "FED-PUB, personalised aggregates by functional similarity, personal sparse masks (Baek et al. 2023)",
    "stamen.algorithms.fedpub.server",
    "stamen.algorithms.fedpub.client",
    headline=Headline.CLIENTS,
    resumable=False,
    keys=(
        option("fedpub-tau", 10.0, "scale of the similarities in the aggregation softmax", bound=ge(0)),
        option("fedpub-proxy-nodes", 100, "nodes of each random graph of the seeded proxy", bound=ge(1)),
        option("fedpub-proxy-graphs", 5, "disjoint random graphs (p=0.1) making the proxy", bound=ge(1)),
        option(
            "fedpub-l1",
            0.0,
            "weight of the masks' L1 norm in the loss (0: the authors' code, where it has no gradient)",
            bound=ge(0),
        ),
        option("fedpub-prune", 0.001, "mask entries below it count as zero in evaluation", bound=ge(0)),
        option(
            "fedpub-loc-l2",
            0.0,
            "weight of the distance to the received aggregate (0: the authors' code, as fedpub-l1)",
            bound=ge(0),
        ),
    ),
    section=SECTION,
)
