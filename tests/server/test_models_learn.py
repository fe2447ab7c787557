"""Paths that had only been checked for shapes, or never run: GAT/APPNP/SGC learning, FedProx's mu
coming from the server, and a resume with partial participation and kept optimiser state."""

import random

import numpy as np
import pytest

from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.server.checkpoint import load_checkpoint, save_checkpoint
from stamen.server.loop import run_rounds
from stamen.simulations.inprocess import InProcessGrid, task_identity

RUN = {"csbm-nodes": 600, "min-clients": 2, "seed": 0}


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


def _run(server: dict, clients: dict | None = None, grid=None, **kwargs):
    """Rows and final weights of a run: the server reads ``server``, the clients ``clients`` (default: the same)."""
    config = RunConfig.from_flower({**RUN, **server})
    client_config = RunConfig.from_flower({**RUN, **(server if clients is None else clients)})
    algorithm = server_algorithm(config.algorithm)
    grid = grid or InProcessGrid(client_config, 3)
    rows = []
    arrays = run_rounds(
        grid,
        algorithm.make_strategy(config),
        config.num_server_rounds,
        algorithm.AGGREGATES,
        config.min_clients,
        60.0,
        rows.append,
        **kwargs,
    )
    return rows, [a.copy() for a in arrays.to_numpy_ndarrays()]


@pytest.mark.parametrize("model", ["gat", "appnp", "sgc"])
def test_graph_models_learn_above_chance(model):
    rows, _ = _run({"model": model, "num-server-rounds": 5, "local-epochs": 5, "lr": 0.02})
    chance = 1 / 7  # csbm-classes
    assert rows[-1]["global_test_acc"] > max(chance + 0.4, rows[0]["global_test_acc"] + 0.4), rows[-1]


FEDPROX = {"num-server-rounds": 1, "local-epochs": 6, "lr": 0.05, "model": "gcn"}
PROX = {**FEDPROX, "algorithm": "fedprox"}


def _close(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.allclose(x, y, atol=1e-7) for x, y in zip(a, b, strict=True))


def test_fedprox_takes_mu_from_the_server_and_differs_from_fedavg():
    fedavg = _run({**FEDPROX, "algorithm": "fedavg"})[1]
    # The server says mu = 5; the clients' own run config says 0: the server's value must be the one used.
    server_mu = _run({**PROX, "proximal-mu": 5.0}, {**PROX, "proximal-mu": 0.0})[1]
    same_mu = _run({**PROX, "proximal-mu": 5.0})[1]
    assert _close(server_mu, same_mu)
    assert not _close(server_mu, fedavg)
    # mu = 0 from the server is FedAvg again, whatever the clients' config says.
    zero = _run({**PROX, "proximal-mu": 0.0}, {**PROX, "proximal-mu": 5.0})[1]
    assert _close(zero, fedavg)


def test_a_fedprox_client_without_the_servers_mu_fails_instead_of_guessing():
    with pytest.raises(KeyError, match="proximal-mu"):  # the in-process grid lets a client's exception through
        _run({**FEDPROX, "algorithm": "fedavg"}, {**FEDPROX, "algorithm": "fedprox"})


def test_resume_with_partial_participation_and_kept_optimizer_state_equals_the_straight_run(tmp_path):
    """fraction-train = 2/3: two of three clients per round, drawn from Python's random (saved in the
    checkpoint as the ServerApp does); clients keep their Adam state between rounds in their contexts."""
    run = {"num-server-rounds": 4, "local-epochs": 2, "fraction-train": 0.67, "keep-optimizer-state": True}
    random.seed(0)
    straight, straight_arrays = _run(run)
    assert all(row["clients"] == 2 for row in straight[1:])

    random.seed(0)
    grid = InProcessGrid(RunConfig.from_flower({**RUN, **run}).to_flower(), 3)
    checkpoints = []

    def keep(checkpoint):
        checkpoint.sampler_state = list(random.getstate())
        checkpoints.append(checkpoint)

    _run({**run, "num-server-rounds": 2}, grid=grid, on_checkpoint=keep)
    save_checkpoint(tmp_path, checkpoints[-1])
    resumed = load_checkpoint(tmp_path)
    random.seed(12345)  # whatever happened in between
    state = resumed.sampler_state
    random.setstate((state[0], tuple(state[1]), state[2]))
    rest, rest_arrays = _run(run, grid=grid, resume=resumed)
    assert rest[-1]["global_test_acc"] == pytest.approx(straight[-1]["global_test_acc"], abs=1e-9)
    assert rest[-1]["train_loss"] == pytest.approx(straight[-1]["train_loss"], abs=1e-6)
    assert _close(rest_arrays, straight_arrays)

    # The same resume without the sampler's state draws other clients: the check can fail.
    random.seed(0)
    grid = InProcessGrid(RunConfig.from_flower({**RUN, **run}).to_flower(), 3)
    _run({**run, "num-server-rounds": 2}, grid=grid, on_checkpoint=keep)
    random.seed(12345)
    other = _run(run, grid=grid, resume=checkpoints[-1])[1]
    assert not _close(other, straight_arrays)
