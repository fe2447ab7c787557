"""The life of a real ``stamen run``: interrupted, resumed, finished, overwritten by a failure.

Ctrl-C must stop every process the command started (SuperLink, SuperExec, ServerApp,
simulation, Ray) within 10 s, mark the run interrupted, print the command that resumes it,
and leave the run directory unchanged once the command has exited. The printed command
resumes it; resuming a finished run changes nothing. A run that fails once Flower runs
exits 1 and never shows a table, an older run's least of all. (One scenario: each Flower
start costs half a minute on a small machine.)
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from stamen.server.checkpoint import load_checkpoint

FEDERATION = ["--federation-config", "num-supernodes=3"]


def _stamen(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "stamen.cli.main", *args], env=env, text=True, **kwargs)


def _files(folder: Path) -> dict[str, tuple[int, str]]:
    return {
        p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _rounds(run_dir: Path) -> int:
    path = run_dir / "metrics.jsonl"
    return len(path.read_text().splitlines()) if path.is_file() else 0


@pytest.mark.slow
@pytest.mark.ray
def test_ctrl_c_stops_everything_then_resume_finish_and_fail_cleanly(tmp_path):
    run_dir = tmp_path / "runs" / "long"
    config = f"num-server-rounds=100000 csbm-nodes=300 output-dir='{tmp_path / 'runs'}' run-name='long'"
    cli = _stamen("run", "--quiet", "-c", config, *FEDERATION, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while _rounds(run_dir) < 3:  # a few rounds done: the checkpoint exists, the engine is busy
        assert cli.poll() is None, cli.communicate()
        assert time.monotonic() < deadline, "the run did not get going"
        time.sleep(0.5)
    tree = psutil.Process(cli.pid).children(recursive=True)
    assert len(tree) >= 4, [p.name() for p in tree]  # flwr, SuperLink, SuperExec, ServerApp, simulation, Ray ...
    signalled = time.monotonic()
    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=60)
    assert cli.returncode == 130, err
    _, alive = psutil.wait_procs(tree, timeout=max(0.1, 10 - (time.monotonic() - signalled)))
    assert not alive, [p.name() for p in alive]
    assert time.monotonic() - signalled < 10 + 2
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "interrupted"
    assert "resume with: stamen run" in err and f"resume-from='{run_dir}'" in err, err
    after_exit = _files(run_dir)
    time.sleep(5)
    assert _files(run_dir) == after_exit  # nothing of the run wrote after the command ended

    # the printed command resumes the run (here only up to one more round)
    checkpoint_round = load_checkpoint(run_dir).round
    resume = _stamen(
        "run",
        "--quiet",
        "-c",
        config,
        "-c",
        f"resume-from='{run_dir}' num-server-rounds={checkpoint_round + 1}",
        *FEDERATION,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = resume.communicate(timeout=300)
    assert resume.returncode == 0, err
    assert json.loads((run_dir / "status.json").read_text())["status"] == "finished"
    rounds = [json.loads(line)["round"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rounds == list(range(checkpoint_round + 2))

    # resuming the finished run again: nothing left to run, nothing changes
    finished = _files(run_dir)
    again = _stamen(
        "run",
        "-c",
        config,
        "-c",
        f"resume-from='{run_dir}' num-server-rounds={checkpoint_round + 1}",
        *FEDERATION,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and "nothing left to run" in out, err
    assert _files(run_dir) == finished

    # overwrite it with a run that fails once Flower runs (every client times out at once):
    # exit 1, one line, no table (neither this run's nor the old one's)
    failing = _stamen(
        "run",
        "--quiet",
        "-c",
        config,
        "-c",
        "num-server-rounds=2 overwrite=true round-timeout=0.001 min-clients=3",
        *FEDERATION,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = failing.communicate(timeout=300)
    assert failing.returncode == 1, (out, err)
    assert "global test accuracy" not in out
    assert err.startswith("stamen run: failed:") and len(err.strip().splitlines()) == 1, err
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "failed" and "clients" in status["error"]
    assert not (run_dir / "summary.json").exists()  # the old run's summary went with the overwrite


def test_a_run_that_never_wrote_its_folder_points_at_its_own_log_not_anothers(tmp_path):
    """A ServerApp that stopped before writing (another command finished the run meanwhile) leaves the folder's
    run.log to that command: the failure quotes this command's own log instead of pointing there."""
    from stamen.server.rundir import RunDirectory
    from stamen.simulations.runner import _where

    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "status.json").write_text(json.dumps({"status": "finished", "token": "the-other-command"}))
    (folder / "run.log").write_text("the other command's log\n")
    log = "INFO stamen: checking\nINFO stamen: /x/r finished all 5 rounds; nothing left to run\n"
    assert (
        _where(RunDirectory(folder), "this-command", log)
        == "INFO stamen: /x/r finished all 5 rounds; nothing left to run"
    )
    (folder / "status.json").write_text(json.dumps({"status": "failed", "token": "this-command"}))
    assert _where(RunDirectory(folder), "this-command", log) == f"see {folder / 'run.log'}"
    assert _where(RunDirectory(folder), "this-command", "") == "see the log above"
