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

# FedLoG (stamen/client/fedlog.py, stamen/server/fedlog.py). Client -> server, every round:
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

# Graph FL algorithms with personalised aggregates (stamen/server/personalised.py). Client -> server, every round:
FEDPUB_UPLOAD = "fedpub-upload"  # ArrayRecord (stamen/client/fedpub.py -> stamen/server/fedpub.py)
FUNCTIONAL_EMBEDDING = "functional-embedding"  # (hidden,): the model's mean output on the seeded proxy graph
FEDGTA_UPLOAD = "fedgta-upload"  # ArrayRecord (stamen/client/fedgta.py -> stamen/server/fedgta.py)
LABEL_MOMENTS = "label-moments"  # (2 * moments * classes,): mixed moments of the propagated labels
SMOOTHING_CONFIDENCE = "smoothing-confidence"  # (1,): the local smoothing confidence
# FedSage+ (stamen/client/fedsage.py <-> stamen/server/fedsage.py): the generator phase before the classifier's rounds,
# ``fedsage-gen-rounds`` federated generator steps as query messages (QUERY in CONFIG names the kind; the
# math and the four hops of a step: stamen/models/fedsage.py). Every reply also carries METRICS with the client's
# PARTITION_ID, which names it in the records the server forwards.
FEDSAGE_START_QUERY = "fedsage-gen-start"  # build the generator, reply the first step's request
FEDSAGE_CROSS_QUERY = "fedsage-gen-cross"  # request: FEDSAGE_REQUESTS; reply: FEDSAGE_GRADIENTS for every other client
FEDSAGE_STEP_QUERY = "fedsage-gen-step"  # request: FEDSAGE_GRADIENTS summed; reply: the next step's FEDSAGE_REQUEST
FEDSAGE_QUERIES = (FEDSAGE_START_QUERY, FEDSAGE_CROSS_QUERY, FEDSAGE_STEP_QUERY)
FEDSAGE_STEP = "fedsage-gen-step-index"  # CONFIG: the step (1..rounds) a message belongs to
FEDSAGE_LAST = "fedsage-gen-last"  # CONFIG (STEP_QUERY): true on the last step: keep the generator, request nothing
# ArrayRecord (client -> server): FEDSAGE_INPUT, FEDSAGE_SLOTS, f"{FEDSAGE_HEAD}{name}" fGen weights and the
# last layer's Gram matrices (stamen.models.fedsage_cross.request_gram)
FEDSAGE_REQUEST = "fedsage-gen-request"
FEDSAGE_INPUT = "input"  # (m, hidden): fGen's input h_v = z_v + eps_v of the nodes with a local target
FEDSAGE_SLOTS = "slots"  # (m,): k_v, slots per node that the cross term matches
FEDSAGE_HEAD = "head."  # prefix of fGen's weights
# ArrayRecord (server -> client j): f"{partition}/{key}" of each FEDSAGE_REQUEST but j's
FEDSAGE_REQUESTS = "fedsage-gen-requests"
# ArrayRecord: j's reply f"{partition}/{name}", the parts of the gradient (stamen.models.fedsage_cross.cross_parts);
# to client i: f"{name}" summed over j, but the parts named in FEDSAGE_CONCATENATED, concatenated (a sparse
# matrix's rows and their values: their sum is the sum of the rows)
FEDSAGE_GRADIENTS = "fedsage-gen-gradients"
FEDSAGE_CONCATENATED = ("rows", "row-values")  # stamen.models.fedsage_cross.ROWS, ROW_VALUES
FEDSAGE_LOSS_D = "gen-loss-d"  # METRICS: the local degree loss of the step's forward pass
FEDSAGE_LOSS_F = "gen-loss-f"  # METRICS: the local feature-matching loss
FEDSAGE_CROSS_LOSS = "gen-cross-loss"  # METRICS (CROSS_QUERY reply): sum over the other clients of L_f^{i,j}

# FedProto (stamen/client/fedproto.py, stamen/server/fedproto.py): prototypes instead of weights.
# Client -> server, every round:
FEDPROTO_UPLOAD = "fedproto-upload"  # ArrayRecord: the client's class prototypes and class counts
# Server -> client, from the second round on (and with the final evaluation):
FEDPROTO_GLOBAL = "fedproto-global"  # ArrayRecord: the global prototypes and their class counts
PROTOTYPES = "prototypes"  # (classes, embedding): mean embedding per class; zero rows where the count is 0
PROTOTYPE_COUNTS = "class-counts"  # (classes,): training nodes behind each prototype

# Secure aggregation (stamen/client/secagg.py -> stamen/server/secagg.py), in a training reply besides Flower's
# SecAgg+ records: the names and dtypes of the masked weights, in the order they were masked.
SECAGG_LAYOUT = "secagg-layout"  # ConfigRecord
SECAGG_NAMES = "names"
SECAGG_DTYPES = "dtypes"
