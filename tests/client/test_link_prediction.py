"""A small federated link-prediction run learns: the global model's pooled test AUC rises over the
initial model's by a stated margin, and its rows carry the task's figures, never accuracies."""

import math

import pytest

from stamen.contract import figures as f
from stamen.contract.run_config import RunConfig
from stamen.simulations.inprocess import run_in_process

# csbm with 300 nodes over 3 clients, 3 rounds of 5 local steps: the initial (random) model scores about
# 0.58 on the clients' test edges, the trained one about 0.76 (seed 0); the margin leaves room for noise.
MARGIN = 0.10


def _rows(**changes):
    values = {"task": "link-prediction", "csbm-nodes": 300, "num-server-rounds": 3, "local-epochs": 5,
              "dropout": 0.0, "seed": 0, **changes}  # fmt: skip
    rows = []
    run_in_process(RunConfig.from_flower(values), 3, rows.append)
    return rows


@pytest.fixture(scope="module")
def fedavg_rows():
    return _rows()


def test_fedavg_raises_the_global_test_auc_over_round_0(fedavg_rows):
    first, last = fedavg_rows[0], fedavg_rows[-1]
    assert first["round"] == 0 and last["round"] == 3
    assert last[f.GLOBAL_TEST_AUC] >= first[f.GLOBAL_TEST_AUC] + MARGIN
    assert last[f.GLOBAL_VAL_AUC] >= first[f.GLOBAL_VAL_AUC] + MARGIN


def test_rows_hold_the_link_figures_pooled_by_edges(fedavg_rows):
    last = fedavg_rows[-1]
    assert f.GLOBAL_TEST_ACC not in last and f.TEST_ACC not in last
    for key, _ in f.LINK_FIGURES:
        if key.endswith(("val_hits", "test_hits")):  # hits-k 50: no client of 100 nodes holds 50 such non-edges
            assert key not in last and key not in last["per_client"]["0"], key
        else:
            assert 0.0 <= last[key] <= 1.0, key
    # the pooled figure is the clients' figures weighted by their test edges: within their range
    clients = [c[f.GLOBAL_TEST_AUC] for c in last["per_client"].values()]
    assert len(clients) == 3 and min(clients) <= last[f.GLOBAL_TEST_AUC] <= max(clients)
    # the last client (highest partition id) is assigned no cut edge: no cut figure of its own
    assert f.link_figure("cut", "auc", True) not in last["per_client"]["2"]


def test_hits_at_k_is_there_where_the_clients_hold_k_non_edges():
    last = _rows(**{"num-server-rounds": 1, "hits-k": 3})[-1]
    for key in (f.link_figure(edges, "hits", model) for edges in f.LINK_SETS for model in (True, False)):
        assert 0.0 <= last[key] <= 1.0, key


@pytest.mark.parametrize(
    ("algorithm", "decoder"), [("local", "dot"), ("fedprox", "dot"), ("fedadam", "dot"), ("fedavg", "mlp")]
)
def test_other_algorithms_and_the_mlp_decoder_run_the_task(algorithm, decoder):
    rows = _rows(algorithm=algorithm, **{"num-server-rounds": 2, "link-decoder": decoder})
    key = f.TEST_AUC if algorithm == "local" else f.GLOBAL_TEST_AUC
    assert [row["round"] for row in rows] == ([1, 2] if algorithm == "local" else [0, 1, 2])
    assert all(not row.get("failed_clients") for row in rows)
    assert math.isfinite(rows[-1][key])
