"""A summary's final and best parts hold the figures of the run's task, never another task's empty keys;
a summary of an earlier version, which held every task's keys, still reads and shows."""

import json

from stamen.contract import figures as f
from stamen.contract.run_config import RunConfig
from stamen.server import outputs

LINK_KEYS = {key for key, _ in f.LINK_FIGURES}
SETTING_KEYS = {f.setting_acc(s, g) for s in ("unseen-node", "missing-class", "new-client") for g in (True, False)}


def _rows(**figures):
    return [
        {"round": 0, **figures},
        {"round": 1, "seconds": 0.1, "clients": 3, "client_train_seconds_max": 0.01, f.TRAIN_LOSS: 0.7, **figures},
    ]


def test_a_node_classification_summary_has_no_link_or_unset_setting_keys():
    rows = _rows(global_test_acc=0.5, global_val_acc=0.6, test_acc=0.4, val_acc=0.3)
    summary = outputs.summarize(rows, 1.0, RunConfig())
    assert set(summary["final"]) == set(summary["best"]) == {"global_test_acc", "global_val_acc", "test_acc",
                                                              "val_acc", f.TRAIN_LOSS}  # fmt: skip
    assert None not in summary["final"].values()
    turned_on = outputs.summarize(rows, 1.0, RunConfig(missing_classes=1))
    assert set(turned_on["final"]) - set(summary["final"]) == {"global_missing_class_acc", "missing_class_acc"}


def test_a_local_algorithm_keeps_its_tasks_global_keys_empty_and_a_reported_figure_stays():
    rows = _rows(test_acc=0.4, val_acc=0.3, global_unseen_node_acc=0.2)  # no global model; a figure besides
    summary = outputs.summarize(rows, 1.0, RunConfig(algorithm="local"))
    assert summary["final"]["global_test_acc"] is None and summary["final"]["test_acc"] == 0.4
    assert summary["final"]["global_unseen_node_acc"] == 0.2  # the row holds it: never dropped
    assert not LINK_KEYS & set(summary["final"])


def test_a_link_prediction_summary_has_no_accuracy_keys():
    rows = _rows(global_test_auc=0.9, global_val_auc=0.8)
    summary = outputs.summarize(rows, 1.0, RunConfig(task="link-prediction"))
    assert set(summary["final"]) == LINK_KEYS | {f.TRAIN_LOSS}
    assert summary["best"]["global_test_auc"] == 0.9 and summary["best_round"] == 0
    assert not {"global_test_acc", "test_acc", *SETTING_KEYS} & set(summary["final"])


def test_an_earlier_summary_with_every_tasks_keys_still_shows_the_same_table():
    rows = _rows(global_test_acc=0.5, global_val_acc=0.6, test_acc=0.4, val_acc=0.3)
    summary = json.loads(json.dumps(outputs.summarize(rows, 1.0, RunConfig())))
    earlier = {**summary, **{part: {key: summary[part].get(key) for key, _ in f.SUMMARY_FIGURES} for part in
                             ("final", "best")}}  # fmt: skip
    assert len(earlier["final"]) > len(summary["final"])
    assert outputs.summary_table(earlier) == outputs.summary_table(summary)
    assert outputs.summary_lines(earlier) == outputs.summary_lines(summary)


def test_hits_at_k_without_k_non_edges_is_not_computable_and_the_table_names_k():
    rows = _rows(global_test_auc=0.9, global_val_auc=0.8, global_test_hits=0.25)  # no client held K val non-edges
    summary = outputs.summarize(rows, 1.0, RunConfig(task="link-prediction", hits_k=7))
    note = summary["hits_at_k"]
    assert note["k"] == 7 and note["figure"] == "hits@7" and note["not_computable"] == ["global_val_hits"]
    assert summary["final"]["global_val_hits"] is None  # never 1
    labels = [label for label, _, _ in outputs.summary_table(summary)]
    assert "global test Hits@7" in labels and not any("Hits@K" in label for label in labels)
    (line,) = [line for line in outputs.summary_lines(summary) if "Hits@7" in line]
    assert line.startswith("Hits@7 not computable for global_val_hits: no client held 7 non-edges")
    every = outputs.summarize(_rows(global_val_auc=0.8, global_val_hits=0.5), 1.0, RunConfig(task="link-prediction"))
    assert every["hits_at_k"] == {"k": 50, "figure": "hits@50"}
    assert "hits_at_k" not in outputs.summarize(_rows(global_val_acc=0.5), 1.0, RunConfig())
