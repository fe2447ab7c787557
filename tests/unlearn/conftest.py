"""Small csbm federations for the unlearning tests."""

import pytest

from contract.run_config import RunConfig


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
