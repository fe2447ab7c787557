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
TRAIN_SECONDS = "train-seconds"  # local training wall time
EVAL_SECONDS = "eval-seconds"  # local evaluation wall time
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

# The evaluation settings of local generalization (graphs/settings.py) beyond the seen
# graph (whose counts are the test counts above): for each setting s, METRICS holds
# f"global-{s}-correct", f"local-{s}-correct" (as above) and f"num-{s}".
SETTINGS = ("unseen-node", "missing-class", "new-client")


def setting_key(model: str, setting: str) -> str:
    """``setting_key("global", "unseen-node") == "global-unseen-node-correct"``; ``model="num"`` for sizes."""
    return f"num-{setting}" if model == "num" else f"{model}-{setting}-correct"


# Keys inside CONFIG.
SERVER_ROUND = "server-round"  # set by Flower's strategies
EVALUATE_RECEIVED = "evaluate-received"  # evaluate the received model before training

# Keys inside CLIENT_INFO.
DEVICE = "device"

# Query messages: federated label-flip certificates. Keys inside METRICS of the reply,
# per budget k: f"{CERTIFIED_RATIO}-{k}", f"{CERTIFIED_ACCURACY}-{k}", f"{UNKNOWN_RATIO}-{k}".
CERTIFY_QUERY = "certify"  # value of CONFIG["query"]
QUERY = "query"
NUM_TARGETS = "num-targets"
CERTIFIED_RATIO = "certified-ratio"
CERTIFIED_ACCURACY = "certified-accuracy"
UNKNOWN_RATIO = "unknown-ratio"
CERTIFY_SECONDS = "certify-seconds"

# FedLoG (client/fedlog.py, server/fedlog.py). Client -> server, every round:
FEDLOG_UPLOAD = "fedlog-upload"  # ArrayRecord: the head-branch synthetic features and class proportions
SYNTHETIC_HEAD = "synthetic-head"  # (classes * num-proto, features), class-major
CLASS_PROPORTIONS = "class-proportions"  # (classes,): the client's share of training nodes per class
# Client -> server, first round only: the pretrained neighbour generator.
FEDLOG_GENERATOR = "fedlog-generator"  # ArrayRecord: the generator's state dict
# Server -> client, from the second round on:
FEDLOG_GLOBAL = "fedlog-global"  # ArrayRecord: the condensed global synthetic nodes
GLOBAL_FEATURES = "features"  # (classes * num-proto, features), class-major
GLOBAL_LABELS = "labels"  # (classes * num-proto,)
FEDLOG_GENERATORS = "fedlog-generators"  # ArrayRecord: f"{class}.{name}": the per-class generators' weights
