"""``--ray-address``: what cannot work on a Ray cluster is refused in one line, before Flower starts."""

import socket

import pytest

from stamen.cli.main import main as stamen
from stamen.contract.identity import PARTITION_DIGEST_ENV
from stamen.simulations.cluster import check_ray_address, cluster_environment, ray_address
from stamen.simulations.flower import flower_environment, free_port

SMALL = "num-server-rounds=2 csbm-nodes=300"


@pytest.fixture
def listening():
    """A local TCP port where something listens (standing in for a Ray head's GCS)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield f"127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("10.0.0.1", "is not HOST:PORT"),
        ("10.0.0.1:99999", "is not HOST:PORT"),
        ("ray://10.0.0.1:10001", "is not HOST:PORT"),
        ("127.0.0.1:FREE", "nothing answers there"),  # a port free when the test runs
    ],
)
def test_an_address_without_a_head_is_refused_in_one_line(address, problem, tmp_path, capsys):
    address = address.replace("FREE", str(free_port()))
    out = tmp_path / "runs"
    code = stamen(["run", "-c", f"{SMALL} output-dir='{out}'", "--clients", "3", "--ray-address", address])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and problem in err, err
    assert not out.exists()


def test_init_args_are_refused_on_a_cluster_and_not_suggested_there(listening, tmp_path, capsys):
    out = tmp_path / "runs"
    run = ["run", "-c", f"{SMALL} output-dir='{out}'", "--ray-address", listening, "--federation-config"]
    assert stamen([*run, "num-supernodes=3 init-args-num-cpus=4"]) == 2
    err = capsys.readouterr().err
    assert "init-args-num-cpus cannot be used with --ray-address" in err and len(err.strip().splitlines()) == 1
    assert stamen([*run, "num-supernodes=3 client-resources-num-cpus=0.5"]) == 2
    err = capsys.readouterr().err
    assert "more --num-cpus" in err and "init-args" not in err, err
    assert not out.exists()


def test_the_in_process_engine_takes_no_ray_address(listening, capsys):
    assert stamen(["run", "--engine", "inprocess", "-c", SMALL, "--ray-address", listening]) == 2
    assert "--ray-address applies to the flower engine only" in capsys.readouterr().err


def test_the_address_reaches_flower_only_when_asked(listening, tmp_path, monkeypatch):
    assert check_ray_address(listening) == listening
    monkeypatch.setenv("RAY_ADDRESS", "10.9.9.9:6379")
    assert ray_address(None) == "10.9.9.9:6379" and ray_address("") == "" and ray_address("local") == ""
    assert "RAY_ADDRESS" not in flower_environment(tmp_path)  # a stray one is not joined without the checks
    env = flower_environment(tmp_path, cluster_environment(listening, "abc"))
    assert env["RAY_ADDRESS"] == listening and env[PARTITION_DIGEST_ENV] == "abc"


def test_clients_without_a_gpu_share_see_no_gpu_whatever_the_users_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    assert flower_environment(tmp_path)["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] == "1"
