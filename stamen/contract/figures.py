"""The names of a run's figures, declared once: one name per figure in ``metrics.jsonl``,
``summary.json``, sweeps, benches and docs.

A round's row (a line of ``metrics.jsonl``) holds the keys of :data:`ROW_KEYS`, plus an
accuracy per evaluation setting (:func:`setting_acc`); each client's entry of ``per_client``
the keys of :data:`CLIENT_KEYS`. A run's ``summary.json`` holds the keys of
:data:`SUMMARY_KEYS`; its ``final`` and ``best`` parts the figures of :data:`SUMMARY_FIGURES`
at the last round and at the round of best validation accuracy.

Accuracies come in two kinds: the *global* model's (the weights the server sent, evaluated
on each client's nodes; ``global_`` names) and the *clients' models'* (each client's model
after its local training, on its own nodes). Both are pooled over clients by node counts.
A run's *headline* test accuracy (:func:`headline`) is the global model's where there is
one, else the clients' models' (an algorithm that keeps no global model).

A link-prediction run (``task='link-prediction'``, :mod:`stamen.contract.tasks`) has no accuracy: its
figures are AUC, average precision and Hits@K (:data:`LINK_METRICS`) on the validation and
test edges of each client and on the cut edges between clients (:data:`LINK_SETS`), of the
global model and of the clients' models, named by :func:`link_figure` (``global_test_auc``).
Each client scores its own edges; a pooled figure is the clients' figures weighted by their
positive edges (AUC and AP do not add over clients as counts do: the exact pooled AUC would
need every score at the server). Its headline is the test AUC, its best round the one of
best validation AUC.
"""

from __future__ import annotations

from typing import Any

from stamen.contract.protocol import SETTINGS

# A round's row (a line of ``metrics.jsonl``) and each client's entry of its ``per_client``, in every room that
# builds, writes or reads one: keys as declared below. Not a TypedDict: a row's keys are open (an accuracy per
# evaluation setting, the link figures of a link-prediction run, the figures a strategy adds of its own).
Row = dict[str, Any]

ROUND = "round"
GLOBAL_TEST_ACC = "global_test_acc"
GLOBAL_VAL_ACC = "global_val_acc"
TEST_ACC = "test_acc"
VAL_ACC = "val_acc"
TRAIN_LOSS = "train_loss"
TRAIN_REGULARISER = "train_regulariser"  # an algorithm's regulariser beside the task loss (Ditto), where it has one
CLIENT_DP_EPSILON = "client_dp_epsilon"
CLUSTERS = "clusters"  # a clustering algorithm's (GCFL's) clusters of clients, by partition id
CLUSTER_SPLITS = "cluster_splits"  # ... and each split of a cluster: when, into what, and the figures that made it

# What a sweep and the benches report of a run (the headline accuracy, see module docstring).
FINAL_TEST_ACC = "final_test_acc"  # at the last round
TEST_ACC_AT_BEST_VAL = "test_acc_at_best_val"  # at the round of best validation accuracy
FINAL_GLOBAL_TEST = "final_global_test"  # the global model's test figure at the last round (model_figure)
FINAL_CLIENTS_TEST = "final_clients_test"  # the clients' own (personalised) models' test figure at the last round
# The attack, privacy and scale benches' name of FINAL_TEST_ACC before it was declared here; read
# only, from units kept by an earlier version in a journal that a bench resumes.
EARLIER_FINAL_TEST_ACC = TEST_ACC

# Link prediction: what is scored (positive edges: the NUM_VAL, NUM_TEST and NUM_CUT metrics) and how.
LINK_SETS = {
    "val": "validation edges",
    "test": "test edges",
    "cut": "cut edges (between clients, on the union of the clients' training graphs)",
}
LINK_METRICS = {"auc": "AUC", "ap": "average precision", "hits": "Hits@K"}


def link_figure(edges: str, metric: str, global_model: bool) -> str:
    """The row key of a link figure: ``link_figure("test", "auc", True) == "global_test_auc"``."""
    return f"{'global_' if global_model else ''}{edges}_{metric}"


GLOBAL_TEST_AUC = link_figure("test", "auc", True)
GLOBAL_VAL_AUC = link_figure("val", "auc", True)
TEST_AUC = link_figure("test", "auc", False)
VAL_AUC = link_figure("val", "auc", False)
LINK_FIGURES: tuple[tuple[str, str], ...] = tuple(
    (link_figure(edges, metric, model), f"{'global' if model else 'client'} {what} {label}"
     + ("" if model else " (local models)"))
    for model in (True, False) for edges, what in (("test", "test"), ("val", "validation"), ("cut", "cut-edge"))
    for metric, label in LINK_METRICS.items()
)  # fmt: skip


def clients_mean(figure: str) -> str:
    """The bench key of a figure's unweighted mean over the clients' own ``per_client`` values
    (``clients_mean("global_test_auc") == "global_test_auc_clients_mean"``): beside the pooled figure,
    which weights clients by their examples, it shows whether small clients fare worse."""
    return f"{figure}_clients_mean"


# What `stamen tune` maximises: the headline validation accuracy at the round of best validation accuracy
BEST_VAL_ACC = "best_val_acc"
FINAL_VAL_ACC = "final_val_acc"  # beside it: a config that peaks and then diverges shows here

SUMMARY_FIGURES: tuple[tuple[str, str], ...] = (
    (GLOBAL_TEST_ACC, "global test accuracy"),
    (GLOBAL_VAL_ACC, "global validation accuracy"),
    (TEST_ACC, "client test accuracy (local models)"),
    (VAL_ACC, "client validation accuracy (local models)"),
    (TRAIN_LOSS, "train loss"),
    (TRAIN_REGULARISER, "train regulariser (Ditto's pull to the global model)"),
    # FedLoG's evaluation settings besides the seen graph, where the clients report them
    ("global_unseen_node_acc", "global unseen-node accuracy"),
    ("unseen_node_acc", "client unseen-node accuracy"),
    ("global_missing_class_acc", "global missing-class accuracy"),
    ("missing_class_acc", "client missing-class accuracy"),
    ("global_new_client_acc", "global new-client accuracy"),
    ("new_client_acc", "client new-client accuracy"),
    *LINK_FIGURES,
)
# The summary figures a task produces (its spec's ``figures``, :mod:`stamen.contract.tasks`): a summary's final
# and best parts hold these (less the evaluation settings the run did not turn on), never another task's.
ACCURACY_FIGURES: tuple[str, ...] = tuple(
    key for key, _ in SUMMARY_FIGURES if key not in dict(LINK_FIGURES) and key != TRAIN_REGULARISER
)  # the regulariser: in a summary only where the rows have it
LINK_TASK_FIGURES: tuple[str, ...] = (TRAIN_LOSS, *dict(LINK_FIGURES))

# The row keys that are wall times (seconds), not figures of the model: trackers keep them apart.
ROW_TIMINGS: dict[str, str] = {
    "seconds": "the round's wall time",
    "exchange_seconds": "sending the round's messages and collecting the replies",
    "aggregate_seconds": "aggregating the replies",
    "final_eval_seconds": "the final evaluation's wall time",
    "client_train_seconds_max": "the slowest client's local training",
    "client_setup_seconds_sum": "the clients' setup, added over clients",
    "client_train_seconds_sum": "the clients' local training, added over clients",
    "client_eval_seconds_sum": "the clients' evaluation, added over clients",
    "client_pack_seconds_sum": "the clients' packing of their replies, added over clients",
    "client_handler_seconds_sum": "the clients' whole handlers, added over clients",
    "client_handler_seconds_max": "the slowest client's whole handler",
}

ROW_KEYS: dict[str, str] = {
    ROUND: "the round (0: the initial model's evaluation; the last row also has the final evaluation)",
    "clients": "clients whose training replies were aggregated",
    "failed_clients": "the clients that failed in the round: node, partition, category, reason",
    "final_eval_failed_clients": "the clients that failed the final evaluation",
    "devices": "the devices the clients trained on",
    "client_processes": "the processes that answered ('HOST[/ray-NODE] pid PID'), each with its peak memory in MB",
    GLOBAL_TEST_ACC: "the global model's test accuracy, pooled over clients",
    GLOBAL_VAL_ACC: "the global model's validation accuracy, pooled over clients",
    TEST_ACC: "the clients' models' test accuracy, pooled over clients",
    VAL_ACC: "the clients' models' validation accuracy, pooled over clients",
    TRAIN_LOSS: "training loss, weighted by training nodes (the task's loss alone: a regulariser is apart)",
    TRAIN_REGULARISER: "the algorithm's regulariser during training, weighted by training nodes (Ditto: "
    "lambda/2 ||v - w||^2 of the personal model v to the global model w)",
    **{key: f"{label}, pooled over clients by positive edges" for key, label in LINK_FIGURES},
    "per_client": "each client's own figures, by partition id (CLIENT_KEYS)",
    "epsilon": "each DP-SGD client's epsilon so far, by partition id",
    "epsilon_max": "the largest DP-SGD client epsilon so far",
    "epsilon_mean": "the mean DP-SGD client epsilon so far",
    CLIENT_DP_EPSILON: "client-level DP epsilon after this round",
    CLUSTERS: "gcfl: the clusters of clients (partition ids) after this round's aggregation",
    CLUSTER_SPLITS: "gcfl: the clusters split this round: round, cluster, parts, mean_update_norm vs eps1, "
    "max_update_norm vs eps2, update_norms, cut_weight (GCFL+: sequence_length, norm_sequences, dtw_distances)",
    **ROW_TIMINGS,
}


def setting_nodes(setting: str) -> str:
    """A client's node count of an evaluation setting (``missing-class`` -> ``missing_class_nodes``): the
    weights of a pooled figure, and of FedLoG's authors' round selection
    (:mod:`stamen.benches.fedlog_selection`)."""
    return setting.replace("-", "_") + "_nodes"


CLIENT_KEYS: tuple[str, ...] = (
    GLOBAL_TEST_ACC, GLOBAL_VAL_ACC, TEST_ACC, VAL_ACC, TRAIN_LOSS, TRAIN_REGULARISER, "train_nodes",
    *(k for k, _ in LINK_FIGURES),
    *(setting_nodes(s) for s in SETTINGS),
)  # fmt: skip

SUMMARY_KEYS: dict[str, str] = {
    "task": "what the clients learnt (stamen/contract/tasks.py)",
    "algorithm": "the FL algorithm",
    "dataset": "the dataset",
    "client_datasets": "a dataset list's run (cross-dataset): the dataset each client held, by partition id",
    "model": "the GNN",
    "rounds": "rounds trained",
    "clients": "clients in the last round",
    "devices": "the devices the clients trained on",
    "final": "the task's SUMMARY_FIGURES at the last round",
    "best_round": "the round of best validation accuracy (link prediction: AUC; the global model's where there is one)",
    "best": "the task's SUMMARY_FIGURES at best_round",
    "max_test_acc": "the highest headline test accuracy of any round (for reference, never for selection)",
    "wall_seconds": "the server loop's wall time",
    "total_wall_seconds": "the run's wall time from its engine's start (engine start-up included: the SuperLink and "
    "flwr run, or the in-process ServerApp's; the command's own imports and checks not)",
    "seconds_per_round": "mean wall time of a round",
    "client_train_seconds_per_round": "mean of the slowest client's local training per round",
    "clients_train_seconds_per_round": "mean of all clients' local training per round",
    "failed_clients": "client failures by category",
    "degraded": "whether any client failed (the figures are not the full federation's)",
    "fairness": "the spread of the final model's test accuracy over clients (each client on its own test nodes)",
    "settings": "the evaluation settings besides the seen graph that the run turned on (unseen-node, ...)",
    "privacy": "the privacy spent",
    "hits_at_k": "link prediction: K of the Hits@K figures (*_hits, shown as hits@K), and those not computable at "
    "the last round (no client held K non-edges of the set), with why",
    "peak_memory_gb": "peak resident memory of the run's processes on the command's machine",
    "client_nodes": "the hosts (Ray nodes on a Ray cluster) whose processes answered the clients' messages",
    "client_processes": "how many processes answered the clients' messages, on every node",
    "client_peak_memory_gb": "the clients' processes' peak memories added up, on every node (an upper bound of "
    "their peak together)",
    "run_dir": "the run directory",
    "provenance": "version, commit, packages, command, seeds",
    "certificates": "the run's label-flip certificates, when asked",
    "unlearning": "the unlearning request's results, when asked",
    CLUSTERS: "gcfl: the final clusters of clients (partition ids)",
    CLUSTER_SPLITS: "gcfl: every split of the run, as in the rows' cluster_splits",
    "notes": "what the run's algorithm computed exactly as another did under its settings (fedprox at one local "
    "step, gcfl without a split; stamen/contract/equivalences.py)",
}


def setting_acc(setting: str, global_model: bool) -> str:
    """The row key of an evaluation setting's accuracy (``missing-class`` -> ``global_missing_class_acc``)."""
    name = setting.replace("-", "_") + "_acc"
    return "global_" + name if global_model else name


def model_figure(part: dict[str, Any], global_model: bool, kind: str = "test") -> Any:
    """The global model's (``global_model``) or the clients' own models' ``kind`` figure in ``part`` (a row, or a
    summary's final/best part): accuracy, or a link-prediction run's AUC; None when ``part`` has none.

    The clients' models are what a personalised algorithm (Ditto, FedRep, FED-PUB, ...) is for; FedAvg's are the
    global model after one more round of local training."""
    keys = (
        (f"global_{kind}_acc", link_figure(kind, "auc", True))
        if global_model
        else (f"{kind}_acc", link_figure(kind, "auc", False))
    )
    return next((part[key] for key in keys if part.get(key) is not None), None)


def headline(part: dict[str, Any], kind: str = "test") -> Any:
    """A run's headline ``kind`` accuracy in ``part`` (a row, or a summary's final/best part): the global
    model's where there is one, else the clients' models'; a link-prediction run's AUC likewise; None when
    none is there."""
    key = headline_key(part, kind)
    return None if key is None else part[key]


def headline_key(part: dict[str, Any], kind: str = "test") -> str | None:
    """The name of the figure :func:`headline` reads from ``part`` (``global_test_acc``), None when none is there."""
    return next((key for key in headline_keys(kind) if part.get(key) is not None), None)


def headline_keys(kind: str = "test", metric: str | None = None) -> tuple[str, ...]:
    """The figures a headline ``kind`` figure is read from, in order (see :func:`headline`): of a task's headline
    ``metric`` (its spec's ``headline``: ``acc``, ``auc``), or of every built-in headline where the task is not
    known (a record read back)."""
    if metric is not None:
        return (f"global_{kind}_{metric}", f"{kind}_{metric}")
    return (f"global_{kind}_acc", f"{kind}_acc", link_figure(kind, "auc", True), link_figure(kind, "auc", False))
