"""FedStar: a structure encoder over random-walk and degree embeddings shared, the feature encoder and head local
(Tan et al. 2023). A graph-FL method, for clients holding graph sets; the personal parts are client state outside
the checkpoint: not resumable."""

from stamen.contract.algorithms import GRAPH_FL_TASK, AlgorithmSpec, Headline
from stamen.contract.keys import Section, ge, option

GRAPH_FL = Section(
    "graphfl",
    "graph-FL methods' options (algorithm='gcfl', 'fedstar'; task='graph-classification')",
    after="graphs",
)  # shared with gcfl's keys

SPEC = AlgorithmSpec(
    "fedstar",
    "FedStar, a structure encoder over random-walk and degree embeddings shared, the feature encoder "
    "and head local (Tan et al. 2023)",
    "stamen.algorithms.fedstar.server",
    "stamen.algorithms.fedstar.client",
    headline=Headline.CLIENTS,
    resumable=False,
    task=GRAPH_FL_TASK,
    keys=(
        option(
            "fedstar-rw-length",
            16,
            "fedstar: random-walk steps of the structural embedding (landing probabilities)",
            bound=ge(1),
        ),
        option(
            "fedstar-degree-length",
            16,
            "fedstar: columns of the one-hot degree embedding (degrees above it share the last)",
            bound=ge(1),
        ),
    ),
    section=GRAPH_FL,
)
