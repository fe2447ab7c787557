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
"""

from __future__ import annotations

from typing import Any

ROUND = "round"
GLOBAL_TEST_ACC = "global_test_acc"
GLOBAL_VAL_ACC = "global_val_acc"
TEST_ACC = "test_acc"
VAL_ACC = "val_acc"
TRAIN_LOSS = "train_loss"
CLIENT_DP_EPSILON = "client_dp_epsilon"

# What a sweep and the benches report of a run (the headline accuracy, see module docstring).
FINAL_TEST_ACC = "final_test_acc"  # at the last round
TEST_ACC_AT_BEST_VAL = "test_acc_at_best_val"  # at the round of best validation accuracy

SUMMARY_FIGURES: tuple[tuple[str, str], ...] = (
    (GLOBAL_TEST_ACC, "global test accuracy"),
    (GLOBAL_VAL_ACC, "global validation accuracy"),
    (TEST_ACC, "client test accuracy (local models)"),
    (VAL_ACC, "client validation accuracy (local models)"),
    (TRAIN_LOSS, "train loss"),
    # FedLoG's evaluation settings besides the seen graph, where the clients report them
    ("global_unseen_node_acc", "global unseen-node accuracy"),
    ("unseen_node_acc", "client unseen-node accuracy"),
    ("global_missing_class_acc", "global missing-class accuracy"),
    ("missing_class_acc", "client missing-class accuracy"),
    ("global_new_client_acc", "global new-client accuracy"),
    ("new_client_acc", "client new-client accuracy"),
)

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
    TRAIN_LOSS: "training loss, weighted by training nodes",
    "per_client": "each client's own figures, by partition id (CLIENT_KEYS)",
    "epsilon": "each DP-SGD client's epsilon so far, by partition id",
    "epsilon_max": "the largest DP-SGD client epsilon so far",
    "epsilon_mean": "the mean DP-SGD client epsilon so far",
    CLIENT_DP_EPSILON: "client-level DP epsilon after this round",
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

CLIENT_KEYS: tuple[str, ...] = (GLOBAL_TEST_ACC, GLOBAL_VAL_ACC, TEST_ACC, VAL_ACC, TRAIN_LOSS, "train_nodes")

SUMMARY_KEYS: dict[str, str] = {
    "algorithm": "the FL algorithm",
    "dataset": "the dataset",
    "model": "the GNN",
    "rounds": "rounds trained",
    "clients": "clients in the last round",
    "devices": "the devices the clients trained on",
    "final": "SUMMARY_FIGURES at the last round",
    "best_round": "the round of best validation accuracy (the global model's where there is one)",
    "best": "SUMMARY_FIGURES at best_round",
    "max_test_acc": "the highest headline test accuracy of any round (for reference, never for selection)",
    "wall_seconds": "the server loop's wall time",
    "total_wall_seconds": "the command's wall time, start-up included",
    "seconds_per_round": "mean wall time of a round",
    "client_train_seconds_per_round": "mean of the slowest client's local training per round",
    "clients_train_seconds_per_round": "mean of all clients' local training per round",
    "failed_clients": "client failures by category",
    "degraded": "whether any client failed (the figures are not the full federation's)",
    "fairness": "the spread of the final model's test accuracy over clients",
    "privacy": "the privacy spent",
    "peak_memory_gb": "peak resident memory of the run's processes on the command's machine",
    "client_nodes": "the hosts (Ray nodes on a Ray cluster) whose processes answered the clients' messages",
    "client_processes": "how many processes answered the clients' messages, on every node",
    "client_peak_memory_gb": "the clients' processes' peak memories added up, on every node (an upper bound of "
    "their peak together)",
    "run_dir": "the run directory",
    "provenance": "version, commit, packages, command, seeds",
    "certificates": "the run's label-flip certificates, when asked",
    "unlearning": "the unlearning request's results, when asked",
}


def setting_acc(setting: str, global_model: bool) -> str:
    """The row key of an evaluation setting's accuracy (``missing-class`` -> ``global_missing_class_acc``)."""
    name = setting.replace("-", "_") + "_acc"
    return "global_" + name if global_model else name


def headline(part: dict[str, Any], kind: str = "test") -> Any:
    """A run's headline ``kind`` accuracy in ``part`` (a row, or a summary's final/best part): the global
    model's where there is one, else the clients' models'; None when neither is there."""
    value = part.get(f"global_{kind}_acc")
    return value if value is not None else part.get(f"{kind}_acc")
