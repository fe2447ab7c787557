"""Names that the ClientApp and the ServerApp share in their Flower messages.

The client and the server meet only through messages; each side names a record or
a metric with the constants below, so a rename cannot leave the two out of step.
"""

ARRAYS = "arrays"  # ArrayRecord: model weights (Flower strategies' default key)
CONFIG = "config"  # ConfigRecord: per-round instructions from the server
METRICS = "metrics"  # MetricRecord: one client's figures for the round
CLIENT_INFO = "client-info"  # ConfigRecord: non-numeric facts about the client (device)

# Keys inside METRICS. Counts rather than ratios, so the server can pool clients exactly.
NUM_EXAMPLES = "num-examples"  # training nodes: the FedAvg weight
TRAIN_LOSS = "train-loss"
TRAIN_REGULARISER = "train-regulariser"  # an algorithm's regulariser beside its task loss (Ditto's pull), optional
TRAIN_SECONDS = "train-seconds"  # local training wall time
EVAL_SECONDS = "eval-seconds"  # local evaluation wall time
SETUP_SECONDS = "setup-seconds"  # run config, client data (cached per process), received weights into the model
PACK_SECONDS = "pack-seconds"  # trained weights into the reply's ArrayRecord
PARTITION_ID = "partition-id"
NUM_VAL = "num-val"
NUM_TEST = "num-test"
# The model the client received (the global model of the previous round), evaluated
# before local training: this is how the global model is evaluated without an extra
# message round.
GLOBAL_VAL_CORRECT = "global-val-correct"
GLOBAL_TEST_CORRECT = "global-test-correct"
# The client's model after its local training (personalised / local model).
LOCAL_VAL_CORRECT = "local-val-correct"
LOCAL_TEST_CORRECT = "local-test-correct"

# The evaluation settings of local generalization (stamen/graphs/settings.py) beyond the seen
# graph (whose counts are the test counts above): for each setting s, METRICS holds
# f"global-{s}-correct", f"local-{s}-correct" (as above) and f"num-{s}".
SETTINGS = ("unseen-node", "missing-class", "new-client")


def setting_key(model: str, setting: str) -> str:
    """``setting_key("global", "unseen-node") == "global-unseen-node-correct"``; ``model="num"`` for sizes."""
    return f"num-{setting}" if model == "num" else f"{model}-{setting}-correct"


# Link prediction (task='link-prediction', stamen/client/link_prediction.py): NUM_EXAMPLES counts training edges,
# NUM_VAL and NUM_TEST the client's validation and test edges, NUM_CUT the cut edges it scores; for each
# model (global, local), edge set (val, test, cut) and figure (auc, ap, hits), METRICS holds the client's
# figure under link_key(...), absent where it is not defined (no edges of the set).
NUM_CUT = "num-cut"
LINK_KEY_SETS = {"val": NUM_VAL, "test": NUM_TEST, "cut": NUM_CUT}  # each edge set's positive-edge count


# Graph classification (task='graph-classification', stamen/client/graph_classification.py) replies the counts above
# over graphs: NUM_EXAMPLES training graphs, NUM_VAL and NUM_TEST validation and test graphs, *_CORRECT the
# graphs classified right; the server pools them into accuracies as it pools nodes.


def link_key(model: str, edges: str, figure: str) -> str:
    """``link_key("global", "test", "auc") == "global-test-auc"``."""
    return f"{model}-{edges}-{figure}"


# Keys inside CONFIG.
SERVER_ROUND = "server-round"  # set by Flower's strategies
EVALUATE_RECEIVED = "evaluate-received"  # evaluate the received model before training

# Keys inside CLIENT_INFO.
DEVICE = "device"
PROCESS = "process"  # the process that answered: "HOST[/ray-NODE] pid PID" (stamen/client/identity.py)
PEAK_RSS_MB = "peak-rss-mb"  # that process's peak resident memory so far

# Query messages: federated label-flip certificates. Keys inside METRICS of the reply,
# per budget k: f"{CERTIFIED_RATIO}-{k}", f"{CERTIFIED_ACCURACY}-{k}", f"{UNKNOWN_RATIO}-{k}".
CERTIFY_QUERY = "certify"  # value of CONFIG["query"]
QUERY = "query"
NUM_TARGETS = "num-targets"
CERTIFIED_RATIO = "certified-ratio"
CERTIFIED_ACCURACY = "certified-accuracy"
UNKNOWN_RATIO = "unknown-ratio"
CERTIFY_SECONDS = "certify-seconds"

# Privacy (DP-SGD on clients, client-level DP). Keys inside METRICS.
EPSILON = "epsilon"  # a DP-SGD client's epsilon so far, composed over all its rounds
NOISE_MULTIPLIER = "noise-multiplier"  # the DP-SGD noise multiplier the client trained with
DP_STEPS = "dp-steps"  # DP-SGD steps taken this round
UNIT_WEIGHT = "unit-weight"  # 1 for every client: client-level DP averages with equal weights
INITIAL_MODEL_QUERY = "initial-model"  # value of CONFIG["query"]: reply with the seeded initial weights

# Query messages: federated unlearning (stamen/server/unlearning/ <-> stamen/client/unlearning.py).
# Every unlearning query carries the model in ARRAYS and the request in CONFIG[UNLEARN_REQUEST].
UNLEARN_REQUEST = "unlearn-request"  # key in CONFIG: client:i, nodes:i:FRACTION or class:c
WASH_STATISTICS_QUERY = "wash-statistics"  # reply: WASH_STATISTICS arrays + METRICS counts
WASH_HELDOUT_QUERY = "wash-heldout"  # request: WASH_EDITS; reply: METRICS changed-i, counted
UNLEARN_EVALUATE_QUERY = "unlearn-evaluate"  # reply: METRICS correct/total counts (stamen.unlearn.evaluate.COUNTS)
UNLEARN_QUERIES = (WASH_STATISTICS_QUERY, WASH_HELDOUT_QUERY, UNLEARN_EVALUATE_QUERY)
# ArrayRecord of a wash-statistics reply: sums over the client's keys k = [h; 1] (d = hidden + 1)
WASH_STATISTICS = "wash-statistics"
KEEP_GRAM = "keep"  # d x d: sum of k k^T over the client's remaining training nodes
FORGET_GRAM = "forget"  # d x d: sum of k k^T over its nodes to forget
FORGET_CROSS = "cross"  # d x C: sum of k r^T over its nodes to forget (r: target - output)
NUM_KEEP = "num-keep"
NUM_FORGET = "num-forget"
# ArrayRecord of a wash-heldout query: candidate edits "edit-0", "edit-1", ... (C x d each)
WASH_EDITS = "wash-edits"
CHANGED = "changed"  # METRICS key prefix: f"{CHANGED}-{i}" predictions changed by edit i
COUNTED = "counted"  # METRICS key: validation predictions counted
# Key in CONFIG of training messages: retrain without the data of this request (fallback when
# a client that holds data to forget cannot answer).
UNLEARN_RETRAIN = "unlearn-retrain"
# Key in CONFIG of training messages: a federated LAF round for this request (stamen/server/unlearning/laf.py).
UNLEARN_LAF = "unlearn-laf"
UNLEARN_REPAIR = "unlearn-repair"  # a head-repair round on the remaining data (laf+r)
UNLEARN_ASCENT = "unlearn-ascent"  # a gradient-ascent round on the holder's forgotten nodes
UNLEARN_TRAIN_KEYS = (UNLEARN_RETRAIN, UNLEARN_LAF, UNLEARN_REPAIR, UNLEARN_ASCENT)  # any: an unlearning round
# Rounds of these keys have no training loss: the clients report TRAIN_LOSS as NaN (not a divergence).
UNLEARN_NO_LOSS = (UNLEARN_REPAIR, UNLEARN_ASCENT)


# Secure aggregation (stamen/client/secagg.py -> stamen/server/secagg.py), in a training reply besides Flower's
# SecAgg+ records: the names and dtypes of the masked weights, in the order they were masked.
SECAGG_LAYOUT = "secagg-layout"  # ConfigRecord
SECAGG_NAMES = "names"
SECAGG_DTYPES = "dtypes"
