"""Every ``stamen deploy`` subcommand as an operator types it, on this machine's loopback.

certs -> partition -> superlink -> register -> supernode (x2) -> run: the run finishes over
TLS with node authentication, each SuperNode reading only its exported partition.
"""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from stamen.simulations.flower import kill_tree


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stamen(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "stamen.cli.main", *args], env=env, capture_output=True, text=True, **kwargs
    )


def _start(log, *args: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "stamen.cli.main", *args]
    return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.mark.slow
def test_every_deploy_subcommand_on_loopback(tmp_path):
    data = "csbm-nodes=300 seed=0"
    certs, shards = tmp_path / "certs", tmp_path / "data"
    done = _stamen("deploy", "certs", "--out", str(certs), "--host", "127.0.0.1", "--clients", "2")
    assert done.returncode == 0, done.stderr
    assert all((certs / name).is_file() for name in ("ca.pem", "superlink.pem", "superlink.key"))
    done = _stamen("deploy", "partition", "--out", str(shards), "--clients", "2", "-c", data)
    assert done.returncode == 0, done.stderr
    port = _free_port()
    started = []
    with open(tmp_path / "hosts.log", "w") as log:
        try:
            started.append(_start(log, "deploy", "superlink", "--certs", str(certs), "--port", str(port),
                                   "--state", str(tmp_path / "state.db")))  # fmt: skip
            deadline = time.monotonic() + 120
            while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
                assert time.monotonic() < deadline and started[0].poll() is None, (tmp_path / "hosts.log").read_text()
                time.sleep(0.5)
            address, ca = f"127.0.0.1:{port}", str(certs / "ca.pem")
            keys = sorted((certs / "nodes").glob("node-*.pub"))
            done = _stamen("deploy", "register", "--superlink", address, "--ca", ca, *map(str, keys), timeout=120)
            assert done.returncode == 0 and len(done.stdout.strip().splitlines()) == 2, done.stderr
            for index in range(2):
                started.append(
                    _start(
                        log,
                        "deploy",
                        "supernode",
                        "--superlink",
                        address,
                        "--ca",
                        ca,
                        "--key",
                        str(certs / "nodes" / f"node-{index}.key"),
                        "--partition-id",
                        str(index),
                        "--num-partitions",
                        "2",
                        "--data-root",
                        str(shards / f"node-{index}"),
                        "--device",
                        "cpu",
                        "--port",
                        str(_free_port()),
                    )  # fmt: skip
                )
            runs = tmp_path / "runs"
            config = f"{data} num-server-rounds=2 min-clients=2 output-dir='{runs}' run-name='deployed'"
            done = _stamen("deploy", "run", "--superlink", address, "--ca", ca, "-c", config, timeout=600)
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            status = json.loads((runs / "deployed" / "status.json").read_text())
            assert status["status"] == "finished" and status["engine"] == "flower"
            rows = [json.loads(line) for line in (runs / "deployed" / "metrics.jsonl").read_text().splitlines()]
            assert [row["round"] for row in rows] == [0, 1, 2] and rows[-1]["clients"] == 2
        finally:
            for process in started:
                kill_tree(process.pid)
