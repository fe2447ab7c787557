"""The unlearning targets against retraining: how far a missed one falls short."""

import pytest

from stamen.experiments.unlearn_targets import check_targets, missed_by


def test_missed_by_is_the_distance_to_the_bar():
    assert missed_by(0.05, "|x| <= 0.02") == pytest.approx(0.03)
    assert missed_by(-0.05, "|x| <= 0.02") == pytest.approx(0.03)
    assert missed_by(0.4, ">= 0.7") == pytest.approx(0.3)
    assert missed_by(0.03, "<= 0.01") == pytest.approx(0.02)


def test_only_missed_targets_carry_a_shortfall():
    row = {"test_global": 0.80, "acc_forget": 0.90, "gap_closure": 0.2, "time_ratio": 0.005}
    mean = {"retrain": {"test_global": 0.81, "acc_forget": 0.80}, "wash": row}
    checks = {c["target"]: c for c in check_targets("client", mean, ["wash"], {"mean": 0.1, "std": 0.02})}
    assert checks["test acc - retrain's"]["met"] and checks["test acc - retrain's"]["missed_by"] is None
    assert checks["MIA gap closure"]["missed_by"] == pytest.approx(0.5)
    assert checks["Df acc - retrain's"]["missed_by"] == pytest.approx(0.05)


@pytest.mark.parametrize("gap", [None, {"mean": 0.01, "std": 0.0}, {"mean": 0.03, "std": 0.02}, {"mean": -0.1}])
def test_gap_closure_is_not_judged_when_the_mia_gap_is_noise(gap):
    row = {"test_global": 0.80, "acc_forget": 0.90, "gap_closure": 3.0, "time_ratio": 0.005}
    mean = {"retrain": {"test_global": 0.81, "acc_forget": 0.80}, "wash": row}
    checks = {c["target"]: c for c in check_targets("nodes", mean, ["wash"], gap)}
    assert checks["MIA gap closure"]["met"] is None and "within noise" in checks["MIA gap closure"]["note"]
