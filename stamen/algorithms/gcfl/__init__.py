"""GCFL and GCFL+: clusters of clients split by their updates' similarity, one model per cluster (Xie et al. 2021).

``gcfl-sequence-length > 0`` is GCFL+ (DTW over update-norm sequences). A graph-FL method, for clients holding
graph sets; the cluster assignment is server state outside the checkpoint: not resumable.
"""

from enum import StrEnum

from stamen.contract.algorithms import GRAPH_FL_TASK, AlgorithmSpec, Headline
from stamen.contract.keys import Section, ge, option


class GCFLMeasure(StrEnum):
    """Which weights GCFL's update norms and similarities are computed over (``gcfl-measure``)."""

    MODEL = "model"  # every weight the clients send (Stamen's: the whole model is a cluster's)
    LAYERS = "layers"  # the message-passing layers only (the authors' server: their shared GIN layers)


GCFL_MEASURES = {
    GCFLMeasure.MODEL.value: "every weight of the model (the whole model is a cluster's)",
    GCFLMeasure.LAYERS.value: "the message-passing layers only, the head's update left out (the authors' server "
    "measures the GIN layers it shares)",
}


GRAPH_FL = Section(
    "graphfl",
    "graph-FL methods' options (algorithm='gcfl', 'fedstar'; task='graph-classification')",
    after="graphs",
)  # shared with fedstar's keys

SPEC = AlgorithmSpec(
    "gcfl",
    "GCFL, clusters of clients split by their updates' similarity, one model per cluster (Xie et al. 2021; "
    "gcfl-sequence-length > 0: GCFL+, by DTW over update-norm sequences)",
    "stamen.algorithms.gcfl.server",
    "stamen.algorithms.gcfl.client",
    headline=Headline.CLIENTS,
    resumable=False,
    task=GRAPH_FL_TASK,
    keys=(
        option(
            "gcfl-eps1",
            0.05,
            "gcfl: a cluster splits only when the norm of its clients' mean update is below it",
            bound=ge(0),
        ),
        option("gcfl-eps2", 0.1, "gcfl: ... and the largest norm of a client's update in it is above it", bound=ge(0)),
        option("gcfl-warmup-rounds", 20, "gcfl: no cluster splits in the first rounds", bound=ge(0)),
        option(
            "gcfl-sequence-length",
            0,
            "gcfl: 0 plain GCFL (cosine of the updates); L > 0 GCFL+ (DTW over the last L update norms; authors: 5)",
            bound=ge(0),
        ),
        option(
            "gcfl-measure", "model", "gcfl: the weights its update norms and similarities cover", choices=GCFL_MEASURES
        ),
    ),
    section=GRAPH_FL,
)
