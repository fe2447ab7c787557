"""The typed entry of a run (``stamen.simulations.run``): a RunConfig in, the provenance handed down as a value and
recorded in the run directory, never through this process's environment."""

import json
import os

import pytest

import stamen
from stamen.contract.provenance import COMMAND_ENV, COMMIT_ENV, Provenance
from stamen.contract.run_config import RunConfig
from stamen.simulations import Engine, FederationConfig, run
from stamen.simulations.errors import RunFailed

TINY = {"csbm-nodes": 300, "num-server-rounds": 2}


def _stamen_environment():
    """Stamen's own variables of this process's environment (a library may add its own on import)."""
    return {key: value for key, value in os.environ.items() if key.startswith("STAMEN_")}


def _provenance(folder, name):
    return json.loads((folder / name).read_text())["provenance"]


def test_the_provenance_given_is_recorded_and_the_environment_is_left_alone(tmp_path):
    config = RunConfig.from_mapping({**TINY, "output-dir": str(tmp_path), "run-name": "typed"})
    origin = Provenance("experiment.py --lr 0.01", "abc1234")
    before = _stamen_environment()
    seen = []

    def observe(row):
        seen.append((os.environ.get(COMMAND_ENV), os.environ.get(COMMIT_ENV)))

    result = run(
        config,
        federation=FederationConfig(num_supernodes=3),
        engine=Engine.INPROCESS,
        provenance=origin,
        observe=observe,
    )
    assert result.run_dir == tmp_path / "typed" and result.summary["rounds"] == 2
    for name in ("status.json", "summary.json"):
        recorded = _provenance(result.run_dir, name)
        assert (recorded["command"], recorded["commit"], recorded["seeds"]) == (
            "experiment.py --lr 0.01",
            "abc1234",
            [0],
        )
    assert _stamen_environment() == before  # nothing set, nothing left behind
    assert seen == [(before.get(COMMAND_ENV), before.get(COMMIT_ENV))] * 3  # nor set while the run trained


def test_the_api_records_its_call_in_status_and_summary(tmp_path):
    result = stamen.run(TINY, clients=3, out=tmp_path, run_name="api")
    for name in ("status.json", "summary.json"):
        assert _provenance(result.dir, name)["command"] == (
            f"stamen.run({TINY!r}, clients=3, engine='inprocess', out={tmp_path!r}, run_name='api')"
        )


def test_the_flower_engine_hands_the_provenance_to_its_processes_in_their_environment(tmp_path, monkeypatch):
    from stamen.simulations import runner

    handed = []

    class SuperLink:
        pid = os.getpid()

        def __init__(self, home, extra=None):
            handed.append(dict(extra or {}))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def flwr_run(home, run_config, federation, log=None, echo=False, extra=None):
        handed.append(dict(extra or {}))
        assert RunConfig.from_flower(run_config).csbm_nodes == 300  # Flower's --run-config: the typed config's keys
        return 1  # no ServerApp ran: the run never started

    monkeypatch.setattr(runner, "LocalSuperLink", SuperLink)
    monkeypatch.setattr(runner, "flwr_run", flwr_run)
    config = RunConfig.from_mapping({**TINY, "output-dir": str(tmp_path), "run-name": "flower"})
    origin = Provenance("stamen run --clients 3", "abc1234")
    before = _stamen_environment()
    with pytest.raises(RunFailed, match="the run did not start"):
        run(config, federation=FederationConfig(num_supernodes=3), engine=Engine.FLOWER, provenance=origin)
    assert len(handed) == 2
    for extra in handed:  # the SuperLink (its simulation starts the ServerApp) and flwr run
        assert (extra[COMMAND_ENV], extra[COMMIT_ENV]) == ("stamen run --clients 3", "abc1234")
    assert _stamen_environment() == before


def test_from_mapping_takes_either_spelling_and_refuses_in_one_line():
    assert RunConfig.from_mapping({"num_server_rounds": 3, "csbm-nodes": 300}) == RunConfig.from_flower(
        {"num-server-rounds": 3, "csbm-nodes": 300}
    )
    with pytest.raises(ValueError) as twice:
        RunConfig.from_mapping({"lr": 0.1, "num-server-rounds": 2, "num_server_rounds": 3})
    assert str(twice.value) == (
        "run config: num-server-rounds is given twice, as 'num-server-rounds' and 'num_server_rounds'; give it once"
    )
    with pytest.raises(ValueError) as listed:
        RunConfig.from_mapping({"lr": [0.1]})
    assert str(listed.value) == "run config: lr=[0.1] is not a number, true/false or a string"
    with pytest.raises(ValueError, match=r"^unknown run-config key 'learning-rate'"):
        RunConfig.from_mapping({"learning_rate": 0.1})


def test_the_federation_config_is_checked_as_the_command_checks_it():
    assert FederationConfig.from_mapping({"num_supernodes": 4}).to_flower() == {
        "num-supernodes": 4,
        "client-resources-num-cpus": 1,
    }
    with pytest.raises(ValueError, match=r"^unknown federation-config key 'num-supernode'; did you mean"):
        FederationConfig.from_mapping({"num-supernode": 4})
    with pytest.raises(ValueError, match=r"^num-supernodes must be a positive integer, got 0$"):
        FederationConfig.from_mapping({"num-supernodes": 0})


def test_the_command_that_repeats_a_typed_run_reads_back_the_same_config():
    import shlex

    from stamen.simulations.overrides import parse_overrides
    from stamen.simulations.runner import resume_command

    config = RunConfig.from_mapping({"csbm-nodes": 300, "lr": 0.05, "run-name": "a b"})
    federation = FederationConfig(num_supernodes=3, client_resources_num_cpus=2)
    command = resume_command(config, federation, Engine.INPROCESS)
    assert command == (
        "stamen run --engine inprocess --clients 3 --federation-config client-resources-num-cpus=2 "
        """-c 'csbm-nodes=300 lr=0.05 run-name="a b"'"""
    )
    words = shlex.split(command)
    assert RunConfig.from_mapping(parse_overrides([words[words.index("-c") + 1]])) == config


@pytest.mark.slow
@pytest.mark.ray
def test_a_flower_run_from_python_records_the_call_in_its_serverapps_process(tmp_path, same_figures):
    before = _stamen_environment()
    flower = stamen.run(TINY, clients=2, engine="flower", out=tmp_path, run_name="flower")
    assert _stamen_environment() == before
    for name in ("status.json", "summary.json"):  # written by the ServerApp, a process of Flower's
        assert _provenance(flower.dir, name)["command"].startswith(f"stamen.run({TINY!r}, clients=2, engine='flower'")
    twin = stamen.run(TINY, clients=2, out=tmp_path, run_name="inprocess")
    same_figures(flower.rows, twin.rows, "rows")
