"""Ditto reports its personal model's task loss as ``train_loss`` (comparable with FedAvg's) and the pull to the
global model apart, as ``train_regulariser``."""

import math

import pytest

import stamen

SMALL = {"csbm-nodes": 300, "num-server-rounds": 4}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("ditto")
    ditto = stamen.run({**SMALL, "algorithm": "ditto"}, clients=3, out=out, run_name="ditto")
    fedavg = stamen.run(SMALL, clients=3, out=out, run_name="fedavg")
    return ditto, fedavg


def test_the_regulariser_is_its_own_figure_pooled_by_training_nodes(runs):
    ditto, _ = runs
    for row in ditto.rows[1:]:
        clients = row["per_client"].values()
        pooled = sum(c["train_regulariser"] * c["train_nodes"] for c in clients) / sum(
            c["train_nodes"] for c in clients
        )
        assert math.isclose(row["train_regulariser"], pooled, rel_tol=1e-12)
    assert ditto.rows[1]["train_regulariser"] == 0.0  # round 1: the personal model starts at the global one
    assert ditto.rows[-1]["train_regulariser"] > 0.1  # then it moves away, and the pull says by how much
    assert ditto.summary["final"]["train_regulariser"] == ditto.rows[-1]["train_regulariser"]


def test_the_train_loss_is_the_task_loss_alone(runs):
    ditto, fedavg = runs
    assert ditto.rows[1]["train_loss"] == pytest.approx(fedavg.rows[1]["train_loss"], rel=1e-6)  # same start
    assert all(row["train_loss"] < 2 * fedavg.rows[1]["train_loss"] for row in ditto.rows[1:])
    assert all("train_regulariser" not in row for row in fedavg.rows)
    assert "train_regulariser" not in fedavg.summary["final"]
