"""Privacy through the round loop and the ClientApp (in-process grid): DP-SGD and client-level DP."""

import math

import numpy as np
import pytest
from opacus.accountants import RDPAccountant

from stamen.contract.run_config import RunConfig
from stamen.server import outputs
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import run_rounds
from stamen.server.privacy import client_dp_epsilon, private_setup
from stamen.simulations.inprocess import InProcessGrid, task_identity

RUN = {"num-server-rounds": 3, "csbm-nodes": 600, "local-epochs": 2, "min-clients": 3, "seed": 0}


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


class RecordingGrid(InProcessGrid):
    """Keeps the weights the server sent and those that came back (as sent: the server may clip later)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.exchanges = []

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        sent = [m.content["arrays"].to_numpy_ndarrays() if "arrays" in m.content else None for m in messages]
        replies = super().send_and_receive(messages, timeout=timeout)
        self.exchanges.append((sent, [r.content["arrays"].to_numpy_ndarrays() for r in replies]))
        return replies


def _run(overrides: dict):
    config = RunConfig.from_flower({**RUN, **overrides})
    grid = RecordingGrid(config.to_flower(), 3)
    setup = private_setup(server_algorithm(config.algorithm).make_strategy(config), config, grid)
    rows = []
    run_rounds(grid, setup.strategy, config.num_server_rounds, True, 3, 60.0, rows.append, initial=setup.initial)
    return config, grid, setup, rows


def test_dp_sgd_rounds_report_every_clients_growing_epsilon_and_learn():
    config, _, _, rows = _run({"privacy": "dp-sgd", "model": "sgc", "noise-multiplier": 1.0, "lr": 0.05})
    trained = [row for row in rows if row["round"] >= 1]
    for row in trained:
        assert set(row["epsilon"]) == {"0", "1", "2"}
        assert all(0 < e < math.inf for e in row["epsilon"].values())
        assert row["epsilon_max"] == max(row["epsilon"].values())
    for client in ("0", "1", "2"):
        series = [row["epsilon"][client] for row in trained]
        assert series == sorted(series) and series[0] < series[-1]
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"] + 0.2
    summary = outputs.summarize(rows, 1.0, config)
    assert summary["privacy"]["epsilon"] == rows[-1]["epsilon"]
    table = outputs.privacy_table(summary["privacy"])
    assert "dp-sgd at delta=1e-05" in table and all(f"{e:.4f}" in table for e in rows[-1]["epsilon"].values())


@pytest.mark.parametrize("clipping", ["client-fixed", "server-fixed", "client-adaptive", "server-adaptive"])
def test_client_level_dp_clips_updates_and_adds_noise(clipping):
    norm = 0.05
    dp = {"privacy": "client-dp", "clipping": clipping, "clipping-norm": norm, "noise-multiplier": 0.2, "model": "sgc"}
    _, grid, setup, rows = _run(dp)
    sent, replies = grid.exchanges[1]  # exchanges[0] asks one client for the seeded initial model
    assert all(len(arrays) > 0 for arrays in sent), "round 1 must send the weights updates are clipped from"
    updates = [np.sqrt(sum(((r - s) ** 2).sum() for r, s in zip(reply, start))) for reply, start in zip(replies, sent)]
    if clipping.startswith("client"):  # round 1 clips at the initial norm, also when adaptive
        assert all(u <= norm * (1 + 1e-5) for u in updates)
    else:  # the server clips: what the clients send is unclipped
        assert max(updates) > norm
    epsilons = [setup.epsilon_after(r) for r in (1, 2, 3)]
    assert 0 < epsilons[0] < epsilons[1] < epsilons[2] < math.inf
    assert len(rows) == 4 and "global_test_acc" in rows[-1]


def test_client_level_epsilon_is_the_accountant_of_the_rounds():
    direct = RDPAccountant()
    direct.history = [(1.2, 0.5, 7)]
    assert client_dp_epsilon(1.2, 0.5, 7, 1e-5) == pytest.approx(direct.get_epsilon(1e-5))
    assert client_dp_epsilon(1.2, 0.5, 0, 1e-5) == 0.0


def test_client_level_dp_refuses_an_algorithm_without_aggregation():
    with pytest.raises(ValueError, match="use algorithm fedavg or fedprox"):
        RunConfig.from_flower({"privacy": "client-dp", "algorithm": "local"})
