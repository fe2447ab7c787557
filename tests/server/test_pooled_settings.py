"""Evaluation settings are pooled over clients by node counts, like validation and test."""

from flwr.app import MetricRecord

from stamen.contract import protocol as p
from stamen.server.rows import pooled_accuracies


def test_settings_are_pooled_by_their_node_counts():
    base = {p.NUM_VAL: 1, p.NUM_TEST: 1}
    metrics = [
        MetricRecord(
            {
                **base,
                p.setting_key("num", "missing-class"): 10,
                p.setting_key("local", "missing-class"): 5,
                p.setting_key("global", "missing-class"): 10,
            }
        ),
        MetricRecord(
            {
                **base,
                p.setting_key("num", "missing-class"): 30,
                p.setting_key("local", "missing-class"): 15,
                p.setting_key("global", "missing-class"): 0,
            }
        ),
    ]
    pooled = pooled_accuracies(metrics)
    assert pooled == {"missing_class_acc": 0.5, "global_missing_class_acc": 0.25}
