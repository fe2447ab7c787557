import tomllib
from pathlib import Path

import pytest

from contract.run_config import RunConfig

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_defaults_are_the_pyproject_run_config():
    table = tomllib.loads(PYPROJECT.read_text())["tool"]["flwr"]["app"]["config"]
    assert RunConfig.from_flower(table) == RunConfig()
    assert RunConfig().to_flower() == table


@pytest.mark.parametrize(
    "values,message",
    [
        ({"num-server-rounds": "ten"}, "'num-server-rounds' must be an integer"),
        ({"lr": True}, "'lr' must be a number"),
        ({"lr": -1.0}, "lr must be > 0"),
        ({"device": "tpu"}, "device must be auto, cpu, cuda or cuda:N"),
        ({"learning-rate": 0.1}, "unknown run-config key"),
    ],
)
def test_malformed_values_are_named(values, message):
    with pytest.raises(ValueError, match=message):
        RunConfig.from_flower(values)


def test_a_private_run_cannot_be_resumed():
    with pytest.raises(ValueError, match="accountants start empty"):
        RunConfig.from_flower({"privacy": "dp-sgd", "model": "sgc", "resume-from": "runs/earlier"})
