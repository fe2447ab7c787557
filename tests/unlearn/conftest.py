"""Small csbm federations for the unlearning tests."""

import pytest

from stamen.contract.run_config import RunConfig


def small_config(**overrides) -> RunConfig:
    """A csbm run small enough to train in about a second (600 nodes, 32 hidden units)."""
    values = dict(
        dataset="csbm",
        csbm_nodes=600,
        csbm_classes=4,
        csbm_features=16,
        csbm_signal=2.0,
        hidden=32,
        num_server_rounds=40,
        dropout=0.3,
        seed=0,
    )
    values.update(overrides)
    return RunConfig(**values)


@pytest.fixture(name="small_config")
def small_config_fixture():
    """The factory :func:`small_config`."""
    return small_config


def trained_model(config: RunConfig, num_clients: int, seed: int = 0):
    """The run's model trained by the app's engine (round loop + ClientApp, in-process) from ``seed``'s weights."""
    from stamen.experiments.unlearn_experiment import new_model, train_original
    from stamen.graphs import build_federation

    clients = build_federation(config.federation(num_clients)).clients
    model = new_model(config, clients[0].num_features, int(clients[0].num_classes), seed)
    model.load_state_dict(train_original(config, num_clients, model.state_dict()).to_torch_state_dict())
    return model.eval()
