"""``stamen deploy supernode`` and ``superlink`` check their input before they start anything.

A wrong partition id, a key that is no SuperNode key, a missing CA or a busy port: one
line on stderr, exit 2, and no process left behind (checked after the start, a failing
SuperNode would leave its ClientApp launcher running behind it).
And a ``kill -9`` of a ``deploy supernode`` that did start takes its SuperNode, SuperExec and
ClientApp launcher along, and the launcher's socket folder. Processes are found by a marker in
their environment: only this test's.
"""

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from stamen.simulations.deploy.certs import check_certificate, check_node_key, check_tls_key, make_certificates

MARK = "STAMEN_TEST_EARLY_CHECKS"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("deploy") / "certs"
    make_certificates(root, ["127.0.0.1"], 2)
    return root


def _marked(mark: str) -> list[str]:
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARK) == mark and process.status() != psutil.STATUS_ZOMBIE:
                found.append(" ".join(process.cmdline()))
        except psutil.Error:
            continue
    return found


def _stamen(*args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run ``stamen ARGS``; return what it did and the processes of its own still alive afterwards."""
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "stamen.cli.main", *args], env=env, capture_output=True, text=True, timeout=120
    )
    left = _marked(mark)
    for process in psutil.process_iter():  # a failed test leaves nothing of its own behind
        try:
            if process.environ().get(MARK) == mark:
                process.kill()
        except psutil.Error:
            continue
    return done, left


def _supernode(certs: Path, key: Path, partition_id: int, ca: Path | None = None) -> list[str]:
    return [
        "deploy",
        "supernode",
        "--superlink",
        "127.0.0.1:9",
        "--ca",
        str(ca or certs / "ca.pem"),
        "--key",
        str(key),
        "--partition-id",
        str(partition_id),
        "--num-partitions",
        "2",
        "--device",
        "cpu",
    ]


def test_the_key_and_certificate_checks(certs, tmp_path):
    assert check_node_key(certs / "nodes" / "node-0.key") == certs / "nodes" / "node-0.key"
    check_certificate(certs / "ca.pem", "CA", "--ca")
    check_tls_key(certs / "superlink.key", "--certs")
    for wrong in (certs / "superlink.key", certs / "nodes" / "node-0.pub", certs / "ca.pem"):
        with pytest.raises(ValueError, match="not a SuperNode private key"):
            check_node_key(wrong)
    with pytest.raises(FileNotFoundError, match="not found"):
        check_node_key(tmp_path / "missing.key")
    with pytest.raises(ValueError, match="not a PEM certificate"):
        check_certificate(certs / "nodes" / "node-0.pub", "CA", "--ca")
    with pytest.raises(ValueError, match="not a PEM private key"):
        check_tls_key(certs / "nodes" / "node-0.key", "--certs")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("bad-key", "--key"),
        ("partition-id-too-large", "--partition-id 2 is not in [0, 2)"),
        ("negative-partition-id", "--partition-id -1 is not in [0, 2)"),
        ("no-ca", "--ca"),
    ],
)
def test_supernode_refuses_bad_input_at_once_and_leaves_no_process(certs, tmp_path, case, expected):
    key, partition, ca = certs / "nodes" / "node-0.key", 0, None
    if case == "bad-key":
        key = tmp_path / "node-0.key"
        key.write_text("not a key\n")
    elif case == "partition-id-too-large":
        partition = 2
    elif case == "negative-partition-id":
        partition = -1
    else:
        ca = tmp_path / "missing-ca.pem"
    done, left = _stamen(*_supernode(certs, key, partition, ca))
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], done.stderr
    assert left == []


@pytest.mark.slow
def test_superlink_on_a_busy_port_says_so_in_one_line(certs, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done, left = _stamen(
            "deploy", "superlink", "--certs", str(certs), "--port", str(port), "--state", str(tmp_path / "s.db")
        )
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {port} is in use on 127.0.0.1" in lines[0] and "--port" in lines[0], lines
    assert left == []


@pytest.mark.slow
def test_kill_9_of_deploy_supernode_takes_its_launcher_along(certs, tmp_path):
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, "OMP_NUM_THREADS": "1", "STAMEN_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "stamen.cli.main", *_supernode(certs, certs / "nodes" / "node-0.key", 0)]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        command += ["--port", str(probe.getsockname()[1])]
    with open(tmp_path / "out.log", "w") as log:
        node = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not (
            any("clientapp_launcher" in line for line in _marked(mark))
            and any("flower-superexec" in line for line in _marked(mark))
        ):  # the SuperNode (dialling a SuperLink that is not there), its SuperExec and the launcher
            assert node.poll() is None and time.monotonic() < deadline, (tmp_path / "out.log").read_text()[-2000:]
            time.sleep(0.2)
        launcher = next(line for line in _marked(mark) if "clientapp_launcher" in line).split()
        socket_folder = Path(launcher[launcher.index("--socket") + 1]).parent
        node.kill()
        node.wait()
        deadline = time.monotonic() + 10
        while _marked(mark) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _marked(mark) == []
        assert not socket_folder.exists()
    finally:
        for process in psutil.process_iter():
            try:
                if process.environ().get(MARK) == mark:
                    process.kill()
            except psutil.Error:
                continue
