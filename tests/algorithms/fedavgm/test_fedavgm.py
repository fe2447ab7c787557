"""FedAvgM (server momentum), added as one server file and one registry line, run in process."""

import pytest

from stamen.contract.run_config import RunConfig
from stamen.simulations.inprocess import run_in_process, task_identity

RUN = {"num-server-rounds": 5, "csbm-nodes": 600, "local-epochs": 2, "min-clients": 2, "lr": 0.005}


def _rows(algorithm: str, **values) -> list[dict]:
    config = RunConfig.from_flower({**RUN, "algorithm": algorithm, **values})
    rows: list[dict] = []
    with task_identity():
        run_in_process(config, 3, rows.append)
    return rows


@pytest.fixture(scope="module")
def fedavg_rows():
    return _rows("fedavg")


def test_fedavgm_learns_and_differs_from_fedavg(fedavg_rows):
    rows = _rows("fedavgm", **{"server-momentum": 0.9, "server-learning-rate": 1.0})  # Hsu et al.'s setting
    assert [row["round"] for row in rows] == [0, 1, 2, 3, 4, 5]
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"] + 0.15
    # round 1's aggregate is FedAvg's (v_1 is the first pseudo-gradient); momentum acts from round 2
    assert rows[1]["global_test_acc"] == fedavg_rows[1]["global_test_acc"]
    assert [row["global_test_acc"] for row in rows[2:]] != [row["global_test_acc"] for row in fedavg_rows[2:]]
    # with a small local step the momentum carries the federation further in the same rounds
    assert rows[-1]["global_test_acc"] > fedavg_rows[-1]["global_test_acc"]


def test_fedavgm_without_momentum_is_fedavg(fedavg_rows):
    rows = _rows("fedavgm", **{"server-momentum": 0.0, "server-learning-rate": 1.0})
    assert [row["global_test_acc"] for row in rows] == [row["global_test_acc"] for row in fedavg_rows]
