"""A deployed run ended from outside with ``flwr stop`` on a real SuperLink: ``stamen deploy local`` exits 1
in one line and the run's ``status.json`` reads ``failed`` with the cause ``stopped``, never ``running``.

The whole deployment runs on this machine (``--loopback``: SuperLink and SuperNodes on 127.0.0.1, TLS and node
authentication as ever), started as the command a user types, in a process of its own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from stamen.simulations.deploy.processes import flower_tool
from stamen.simulations.flower import FEDERATION, flower_environment

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-deployment")]


def _rows(run_dir: Path) -> int:
    path = run_dir / "metrics.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def test_flwr_stop_on_a_real_superlink_records_the_run_failed_and_exits_1(tmp_path):
    runs, workdir = tmp_path / "runs", tmp_path / "work"
    config = f"csbm-nodes=300 num-server-rounds=10000 min-clients=2 output-dir='{runs}' run-name='deployed'"
    command = [str(Path(sys.executable).parent / "stamen"), "deploy", "local", "--clients", "2", "--loopback"]
    command += ["--workdir", str(workdir), "-c", config]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"}
    )
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(process.stdout or []), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 150
        while _rows(runs / "deployed") < 2:  # the run is under way: its folder written, rounds going
            assert process.poll() is None, "".join(out)[-3000:] + (process.stderr.read() if process.stderr else "")
            assert time.monotonic() < deadline, "".join(out)[-3000:]
            time.sleep(0.5)
        status = json.loads((runs / "deployed" / "status.json").read_text())
        assert status["status"] == "running"
        run_id = status.get("flower_run_id") or int(re.findall(r"started run (\d+)", "".join(out))[0])
        home = workdir / "operator"
        stop = subprocess.run(
            [flower_tool("flwr", home), "stop", str(run_id), FEDERATION],
            env=flower_environment(home),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stop.returncode == 0, stop.stdout + stop.stderr
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = [line for line in err.splitlines() if line.startswith("stamen deploy:")]
    assert process.returncode == 1, err[-3000:]
    status_file = runs / "deployed" / "status.json"
    assert lines[-1] == (
        f"stamen deploy: failed: the run was stopped from outside (flwr stop, Flower run {run_id}) before it "
        f"finished; {status_file} records it as failed"
    ), err[-3000:]
    status = json.loads(status_file.read_text())
    assert (status["status"], status.get("cause")) == ("failed", "stopped"), json.dumps(status)[-1500:]
    assert "Traceback" not in err
