"""A deployed run stopped from outside (``flwr stop``) is recorded as ended: its ``status.json`` reads
``failed`` with the cause ``stopped``, and ``stamen deploy`` says so in one line and exits 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stamen.cli.commands import deploy
from stamen.cli.main import main as stamen
from stamen.contract.run_config import RunConfig
from stamen.server.rundir import RunDirectory, RunStatus
from stamen.simulations.deploy.stopped_run import stopped_from_outside
from stamen.simulations.errors import RunFailed

RUN_ID = 4242


def _started(output_dir: Path, run_name: str, flower_run_id: int = RUN_ID) -> Path:
    """A run directory as a deployed ServerApp leaves it when it is ended mid-run: ``running``."""
    config = RunConfig(output_dir=str(output_dir), run_name=run_name)
    run_dir = RunDirectory.plan(config)
    run_dir.create(config, flower_run_id=flower_run_id, engine="flower")
    return run_dir.path


def _status(folder: Path) -> dict:
    return json.loads((folder / "status.json").read_text())


def test_a_named_run_stopped_from_outside_is_recorded_failed_with_its_cause(tmp_path):
    folder = _started(tmp_path, "deployed")
    failure = stopped_from_outside(str(tmp_path), "deployed", RUN_ID)
    status = _status(folder)
    assert (status["status"], status["cause"]) == ("failed", "stopped")
    assert status["error"] == f"the run was stopped from outside (flwr stop, Flower run {RUN_ID}) before it finished"
    assert status["ended"] >= status["started"]
    assert isinstance(failure, RunFailed)
    assert str(failure) == f"{status['error']}; {folder / 'status.json'} records it as failed"
    assert [entry.name for entry in tmp_path.iterdir()] == ["deployed"]  # no stray temporary file


@pytest.mark.parametrize("recorded", ["failed", "interrupted"])
def test_the_servers_own_end_without_a_reason_is_given_the_stop_as_its_cause(tmp_path, recorded):
    """A stopped ServerApp may write its end first: failed (Flower exited it) or interrupted (its refused
    heartbeat raised SIGINT in it); the SuperLink's answer says why, and the ServerApp's record is kept."""
    folder = _started(tmp_path, "deployed")
    RunDirectory(folder).set_status(RunStatus(recorded), error=recorded, ended=1.0)
    failure = stopped_from_outside(str(tmp_path), "deployed", RUN_ID)
    status = _status(folder)
    assert (status["status"], status["cause"], status["serverapp_error"]) == ("failed", "stopped", recorded)
    assert str(failure).endswith("records it as failed")


@pytest.mark.parametrize("end", ["finished", "pruned"])
def test_an_end_the_server_wrote_with_its_reason_is_kept(tmp_path, end):
    folder = _started(tmp_path, "deployed")
    RunDirectory(folder).set_status(RunStatus(end), ended=1.0)
    failure = stopped_from_outside(str(tmp_path), "deployed", RUN_ID)
    assert _status(folder)["status"] == end and str(failure).endswith(f"records it as {end}")


def test_an_unnamed_run_is_found_by_its_flower_run_id(tmp_path):
    other, stopped = _started(tmp_path, "other", flower_run_id=7), _started(tmp_path, "stopped")
    (tmp_path / "loose.txt").write_text("not a run")
    stopped_from_outside(str(tmp_path), "", RUN_ID)
    assert _status(stopped)["status"] == "failed"
    assert _status(other)["status"] == "running"  # another run's folder is left as it is


def test_a_run_stopped_before_it_wrote_a_folder_says_so(tmp_path):
    failure = stopped_from_outside(str(tmp_path / "runs"), "", RUN_ID)
    assert str(failure).endswith("before it finished; it wrote no run directory")
    assert not (tmp_path / "runs").exists()


class _StoppedDeployment:
    """``LocalDeployment`` whose run starts a ServerApp that writes its folder and is then stopped."""

    def __init__(self, workdir: Path, *args: object, **kwargs: object) -> None:
        self.workdir = workdir

    def __enter__(self) -> _StoppedDeployment:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def run(self, overrides, stream=False, started=None) -> int:
        _started(Path(str(overrides["output-dir"])), str(overrides["run-name"]))
        started.write(f"Successfully started run {RUN_ID}\n")
        return 1  # follow_run's code for an end other than completed

    def run_end(self, run_id: int) -> str:
        assert run_id == RUN_ID
        return "finished:stopped"


def test_deploy_local_of_a_stopped_run_exits_1_in_one_line(tmp_path, monkeypatch, capsys):
    import stamen.graphs.node_data as node_data

    monkeypatch.setattr(deploy, "LocalDeployment", _StoppedDeployment)
    monkeypatch.setattr(node_data, "export_partitions", lambda spec, root: [])
    runs = tmp_path / "runs"
    code = stamen(
        ["deploy", "local", "--clients", "2", "--workdir", str(tmp_path / "work"), "--loopback"]
        + ["-c", f"csbm-nodes=60 output-dir='{runs}' run-name='deployed'"]
    )
    err = capsys.readouterr().err
    assert code == 1, err
    assert err == (
        f"stamen deploy: failed: the run was stopped from outside (flwr stop, Flower run {RUN_ID}) before it "
        f"finished; {runs / 'deployed' / 'status.json'} records it as failed\n"
    )
    assert (_status(runs / "deployed")["status"], _status(runs / "deployed")["cause"]) == ("failed", "stopped")


def test_a_run_that_failed_on_its_own_keeps_the_general_message(tmp_path, monkeypatch, capsys):
    import stamen.graphs.node_data as node_data

    monkeypatch.setattr(_StoppedDeployment, "run_end", lambda self, run_id: "finished:failed")
    monkeypatch.setattr(deploy, "LocalDeployment", _StoppedDeployment)
    monkeypatch.setattr(node_data, "export_partitions", lambda spec, root: [])
    runs = tmp_path / "runs"
    code = stamen(
        ["deploy", "local", "--clients", "2", "--workdir", str(tmp_path / "work"), "--loopback"]
        + ["-c", f"csbm-nodes=60 output-dir='{runs}' run-name='deployed'"]
    )
    assert code == 1
    assert "the deployed run failed or was stopped (flwr exit code 1)" in capsys.readouterr().err
    assert _status(runs / "deployed")["status"] == "running"  # not this command's to judge: left to the ServerApp


def test_deploy_run_of_a_stopped_run_records_it_and_fails(tmp_path, monkeypatch):
    from stamen.simulations import run_follow

    runs = tmp_path / "runs"
    statuses = iter(["running", "finished:stopped"])

    def flwr_run(flwr_home, run_config, federation_config, watchers=()):
        _started(runs, "deployed")  # the ServerApp wrote its folder before the run was stopped
        for sink in watchers:
            sink.write(f"Successfully started run {RUN_ID}\n")
        return 0

    monkeypatch.setattr(deploy, "OPERATOR_HOME", tmp_path / "operator")
    monkeypatch.setattr(deploy, "flwr_run", flwr_run)
    monkeypatch.setattr(deploy, "run_status", lambda flwr_home, run_id: next(statuses))
    monkeypatch.setattr(run_follow, "STATUS_WAIT", 0.0)
    (tmp_path / "ca.pem").write_text("not read here")
    args = deploy.argparse.Namespace(
        superlink="127.0.0.1:9092", ca=tmp_path / "ca.pem", run_config=[f"output-dir='{runs}' run-name='deployed'"]
    )
    with pytest.raises(RunFailed, match=r"^the run was stopped from outside \(flwr stop, Flower run 4242\)"):
        deploy.run_main(args)
    assert (_status(runs / "deployed")["status"], _status(runs / "deployed")["cause"]) == ("failed", "stopped")
