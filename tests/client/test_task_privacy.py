"""Privacy and robustness on link prediction and graph classification (stamen/contract/tasks.py): client-level DP is
seeded and accounted as for node classification, graph classification's per-graph DP-SGD reports the
accountant's epsilon of every step, the attacks change the rows, a robust rule is admitted."""

import math

import pytest
import torch
from flwr.app import RecordDict
from opacus.accountants import RDPAccountant

from stamen.client.algorithms import client_algorithm
from stamen.client.attacks import attacked
from stamen.client.job import LocalJob
from stamen.client.privacy import sample_rate
from stamen.contract import figures as f
from stamen.contract.run_config import RunConfig
from stamen.graphs import FederationSpec, build_federation
from stamen.server.driver import build_driver
from stamen.server.privacy import client_dp_epsilon
from stamen.simulations.inprocess import InProcessGrid, run_in_process, task_identity

LINK = {"task": "link-prediction", "csbm-nodes": 300, "local-epochs": 5}
GRAPHS = {"task": "graph-classification", "dataset": "graphs-synth", "partitioner": "random", "model": "gin",
          "local-epochs": 2}  # fmt: skip
TASKS = {"link-prediction": (LINK, f.GLOBAL_TEST_AUC), "graph-classification": (GRAPHS, f.GLOBAL_TEST_ACC)}


def _rows(task: str, **changes) -> list[dict]:
    base, _ = TASKS[task]
    config = RunConfig.from_flower({**base, "num-server-rounds": 2, "dropout": 0.0, "seed": 0, **changes})
    rows: list[dict] = []
    run_in_process(config, 3, rows.append)
    return rows


def _headlines(task: str, rows: list[dict]) -> list[float]:
    return [row[TASKS[task][1]] for row in rows]


@pytest.mark.parametrize("task", list(TASKS))
def test_client_level_dp_runs_seeded_and_spends_the_accountants_epsilon(task, same_figures):
    base, _ = TASKS[task]
    dp = {"privacy": "client-dp", "noise-multiplier": 0.5, "clipping-norm": 0.5}
    config = RunConfig.from_flower({**base, "num-server-rounds": 2, "dropout": 0.0, "seed": 0, **dp})
    runs = []
    for _ in range(2):
        rows: list[dict] = []
        with task_identity():
            driver = build_driver(config, InProcessGrid(config, 3), clients=3)
            driver.run(rows.append)
        runs.append(rows)
    same_figures(runs[0], runs[1], task)  # the server's noise is drawn from the run's seed
    assert not runs[0][-1]["failed_clients"] and runs[0][-1]["clients"] == 3
    assert _headlines(task, runs[0]) != _headlines(task, _rows(task))  # clipped and noised: not the plain run
    # every client sampled each round (q = 1): the accountant of 1, 2 rounds, as stamen/server/app.py reports it
    assert driver.epsilon_after is not None
    spent = [driver.epsilon_after(r) for r in (1, 2)]
    assert spent == [client_dp_epsilon(0.5, 1.0, r, config.target_delta) for r in (1, 2)]
    assert 0 < spent[0] < spent[1] < math.inf


def test_per_graph_dp_sgd_reports_each_clients_accountant_growing_by_round(same_figures):
    dp = {"privacy": "dp-sgd", "noise-multiplier": 0.8, "lr": 0.01, "local-epochs": 1, "num-server-rounds": 3}
    rows, again = _rows("graph-classification", **dp), _rows("graph-classification", **dp)
    same_figures(rows, again, "dp-sgd")  # batches and noise are seeded per client and round
    federation = build_federation(FederationSpec(dataset="graphs-synth", num_clients=3, partitioner="random", seed=0))
    trained = [row for row in rows if row["round"] >= 1]
    for partition, client in enumerate(federation.clients):
        series = [row["epsilon"][str(partition)] for row in trained]
        assert series[0] < series[1] < series[2]
        rate = sample_rate(int(client.train_mask.sum()), 32)  # each training graph is one record
        direct = RDPAccountant()
        direct.history = [(0.8, rate, 3 * round(1 / rate))]
        assert series[-1] == pytest.approx(direct.get_epsilon(1e-5), rel=1e-9)
    assert trained[-1]["epsilon_max"] == max(trained[-1]["epsilon"].values())


def test_label_flip_flips_graph_labels_and_changes_the_rows():
    config = RunConfig.from_flower({**GRAPHS, "attack": "label-flip", "malicious-clients": "0,",
                                    "attack-flip-fraction": 0.5})  # fmt: skip
    data = build_federation(config.federation(3)).clients[0]
    job = LocalJob(config, 0, data, torch.device("cpu"), RecordDict())
    poisoned, _ = attacked(job, client_algorithm("fedavg")[1], 1, 3)
    changed = poisoned.data.y != data.y
    assert int(changed.sum()) == math.floor(0.5 * int(data.train_mask.sum()))  # graph labels, among training graphs
    assert bool(data.train_mask[changed].all()) and changed.numel() == data.num_graphs
    flipped = _rows("graph-classification", attack="label-flip", **{"malicious-clients": "1"})
    assert _headlines("graph-classification", flipped) != _headlines(
        "graph-classification", _rows("graph-classification")
    )


# One sign-flipping client of three (seed 0, 2 rounds): FedAvg's final test figure falls by 0.34 (link AUC) and
# 0.36 (graph accuracy) below the clean run's, the coordinate-wise median's by 0.05 for both.
BREAKS, HOLDS = 0.2, 0.1


@pytest.mark.parametrize("task", list(TASKS))
def test_sign_flip_breaks_fedavg_not_the_median(task):
    clean = _headlines(task, _rows(task))
    broken = _headlines(task, _rows(task, attack="sign-flip", **{"malicious-clients": "1"}))
    robust = _rows(task, algorithm="fedmedian", attack="sign-flip", **{"malicious-clients": "1"})
    assert broken[0] == clean[0]  # round 0: the seeded initial model, before any attack
    assert broken[-1] < clean[-1] - BREAKS
    assert [row["round"] for row in robust] == [0, 1, 2] and not robust[-1]["failed_clients"]
    assert _headlines(task, robust)[-1] > clean[-1] - HOLDS
