"""``operator_run`` ends when the SuperLink says the run finished, not when ``flwr run --stream``'s log
stream ends: Flower 1.42's SuperLink can end the stream while the run goes on (a 10-node deployment on
2 cores, its state database locked), and ``flwr run`` then exits 0 as if the run were done."""

from __future__ import annotations

from pathlib import Path

import pytest

from stamen.simulations import run_follow
from stamen.simulations.deploy import processes


@pytest.fixture
def fake_flower(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """``flwr run`` that prints a started run and exits with ``exit_code``; ``flwr ls`` answers ``statuses`` in turn."""
    state = {"statuses": [], "asked": 0, "exit_code": 0}

    def relayed_call(command, sinks, **popen):
        for sink in sinks:
            sink.write("Successfully started run 4242\n")
            sink.write("configure_train: Sampled 10 nodes (out of 10)\n")
        return state["exit_code"]

    def run_status(flwr_home, run_id, prefix=()):
        assert run_id == 4242
        state["asked"] += 1
        return state["statuses"].pop(0)

    monkeypatch.setattr(processes, "relayed_call", relayed_call)
    monkeypatch.setattr(processes, "run_status", run_status)
    monkeypatch.setattr(processes, "stage_app", lambda flwr_home: tmp_path / "app")
    monkeypatch.setattr(run_follow, "STATUS_WAIT", 0.0)
    return state


def _run(tmp_path: Path) -> tuple[int, str]:
    log = tmp_path / "run.log"
    code = processes.operator_run(tmp_path / "home", {"num-server-rounds": 5}, log_file=log)
    return code, log.read_text()


def test_a_run_followed_past_an_early_end_of_its_log_stream(fake_flower, tmp_path: Path) -> None:
    fake_flower["statuses"] = ["running", "running", "running", "finished:completed"]
    code, log = _run(tmp_path)
    assert code == 0
    assert fake_flower["asked"] == 4
    assert "log stream ended while run 4242 is running; waiting for it to finish" in log
    assert log.rstrip().endswith("stamen: run 4242 finished:completed")


def test_a_stream_that_ends_with_its_run_adds_nothing(fake_flower, tmp_path: Path) -> None:
    fake_flower["statuses"] = ["running", "finished:completed"]  # the SuperLink records the end a moment later
    code, log = _run(tmp_path)
    assert code == 0
    assert "stamen:" not in log


@pytest.mark.parametrize("status", ["finished:failed", "finished:stopped"])
def test_a_run_that_did_not_complete_is_a_failure(fake_flower, tmp_path: Path, status: str) -> None:
    fake_flower["statuses"] = [status]
    code, log = _run(tmp_path)
    assert code == 1
    assert f"stamen: run 4242 {status}" in log


def test_flwr_runs_own_failure_is_returned_unchanged(fake_flower, tmp_path: Path) -> None:
    fake_flower["exit_code"] = 2
    code, _ = _run(tmp_path)
    assert code == 2
    assert fake_flower["asked"] == 0


def test_a_busy_superlink_is_asked_again(fake_flower, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    answers = iter([TimeoutError("flwr ls did not answer within 60 s"), "running", "finished:completed"])

    def run_status(flwr_home, run_id, prefix=()):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(processes, "run_status", run_status)
    code, log = _run(tmp_path)
    assert code == 0
    assert "while run 4242 is running" in log  # the second look still unfinished: noted


def test_stamen_deploy_run_follows_the_run_too(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys) -> None:
    """``stamen deploy run`` (a real deployment's operator) ends with the run, not with flwr run's stream."""
    from stamen.cli.commands import deploy

    statuses = iter(["running", "running", "finished:failed"])
    calls = {}

    def flwr_run(flwr_home, run_config, federation_config, watchers=()):
        calls["run_config"] = run_config
        for sink in watchers:
            sink.write("Successfully started run 77\n")
        return 0

    monkeypatch.setattr(deploy, "OPERATOR_HOME", tmp_path / "operator")
    monkeypatch.setattr(deploy, "flwr_run", flwr_run)
    monkeypatch.setattr(deploy, "run_status", lambda flwr_home, run_id: next(statuses))
    monkeypatch.setattr(run_follow, "STATUS_WAIT", 0.0)
    (tmp_path / "ca.pem").write_text("not read here")
    args = deploy.argparse.Namespace(
        superlink="127.0.0.1:9092", ca=tmp_path / "ca.pem", run_config=["num-server-rounds=2"]
    )
    assert deploy.run_main(args) == 1
    assert calls["run_config"] == {"num-server-rounds": 2}
    out = capsys.readouterr().out
    assert "log stream ended while run 77 is running" in out and "stamen: run 77 finished:failed" in out


def test_the_superlinks_state_database_waits_for_its_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    from flwr.supercore import sql_mixin

    from stamen.simulations.flower_internals.superlink import STATE_BUSY_TIMEOUT_MS, patient_state_database

    monkeypatch.setattr(sql_mixin, "SQLITE_PRAGMAS", sql_mixin.SQLITE_PRAGMAS)  # restored after the test
    before = dict(sql_mixin.SQLITE_PRAGMAS)
    patient_state_database()
    connection = sqlite3.connect(":memory:")
    sql_mixin._set_sqlite_pragmas(connection, None)  # what Flower runs on each new connection
    waits = connection.execute("PRAGMA busy_timeout").fetchone()[0]
    assert waits == STATE_BUSY_TIMEOUT_MS > int(before["busy_timeout"])
    assert {k: v for k, v in sql_mixin.SQLITE_PRAGMAS if k != "busy_timeout"} == {
        k: v for k, v in before.items() if k != "busy_timeout"
    }
