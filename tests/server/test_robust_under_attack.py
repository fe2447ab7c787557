"""Robust aggregation under attack: one sign-flipping client of five breaks FedAvg, not Krum or the median."""

import pytest

from stamen.contract.run_config import RunConfig
from stamen.simulations.inprocess import run_in_process, task_identity
from tests.server.test_strategies import TASK  # the easy, near-IID task on which every rule learns

SIGN_FLIP = {"attack": "sign-flip", "malicious-clients": "1"}  # one of five, drawn by the seed


def _final_accuracy(algorithm: str, **values) -> float:
    config = RunConfig.from_flower({**TASK, "algorithm": algorithm, **values})
    rows: list[dict] = []
    with task_identity():
        run_in_process(config, 5, rows.append)
    return rows[-1]["global_test_acc"]


@pytest.fixture(scope="module")
def clean() -> float:
    return _final_accuracy("fedavg")


def test_sign_flip_breaks_fedavg(clean):
    assert clean > 0.75
    assert _final_accuracy("fedavg", **SIGN_FLIP) < clean - 0.3


@pytest.mark.parametrize("algorithm", ["krum", "fedmedian"])
def test_robust_rules_stay_near_clean_under_sign_flip(clean, algorithm):
    assert _final_accuracy(algorithm, **SIGN_FLIP) > clean - 0.1
