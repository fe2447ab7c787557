"""The warm ClientApp launcher and the ``flwr-clientapp`` stand-in, without Flower or PyTorch.

A launcher process runs :class:`~simulations.deploy.clientapp_launcher.Launcher` with
a stand-in entry point (it records its arguments and exits with code 3); the
``flwr-clientapp`` script :func:`prepare_warm_clientapp` writes is run as Flower's
SuperExec would run it.
"""

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulations.deploy.clientapp_launcher import Refused, check_arguments, remove_socket
from simulations.deploy.warm_clientapp import prepare_warm_clientapp

PORT = 49321
TOKEN = "ab" * 32
ARGV = ["--runtime-api-address", f"127.0.0.1:{PORT}", "--token", TOKEN, "--insecure", "--parent-pid", "1"]

LAUNCHER = """
import sys
from simulations.deploy.clientapp_launcher import serve_on

socket_path, port, argv_file = sys.argv[1:4]

def entry():
    with open(argv_file, "w") as out:
        out.write(" ".join(sys.argv))
    sys.exit(3)

serve_on(socket_path, int(port), lambda: entry)
"""


def test_only_launches_for_this_nodes_runtime_api_are_accepted():
    assert check_arguments(ARGV, PORT) == ARGV
    assert check_arguments(["--runtime-api-address", f"[::1]:{PORT}", "--token", TOKEN], PORT)
    refused = [
        (["--runtime-api-address", f"127.0.0.1:{PORT + 1}", "--token", TOKEN], "not this node's"),
        (["--runtime-api-address", f"10.0.0.5:{PORT}", "--token", TOKEN], "not this node's"),
        (["--runtime-api-address", f"127.0.0.1:{PORT}", "--token", "not-hex"], "task token"),
        (["--runtime-api-address", f"127.0.0.1:{PORT}"], "task token"),
        ([*ARGV, "--app", "/elsewhere"], "unexpected argument"),
        ([*ARGV[:-2], "--parent-pid"], "needs a value"),
        ("--token x", "list of strings"),
    ]
    for argv, reason in refused:
        with pytest.raises(Refused, match=reason):
            check_arguments(argv, PORT)


@pytest.fixture
def warm(tmp_path):
    real = tmp_path / "real-flwr-clientapp"  # stands for Flower's executable: a cold start
    real.write_text('#!/bin/sh\necho cold "$@"\n')
    real.chmod(stat.S_IRWXU)
    files = prepare_warm_clientapp(tmp_path / "clientapp", str(real))
    argv_file = tmp_path / "argv.txt"
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(files.socket), str(PORT), str(argv_file)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    deadline = time.monotonic() + 30
    while not files.socket.exists():
        assert launcher.poll() is None and time.monotonic() < deadline, "the launcher did not start listening"
        time.sleep(0.05)
    yield files, launcher, argv_file
    if launcher.poll() is None:
        launcher.kill()
        launcher.wait(timeout=10)
    remove_socket(str(files.socket))


def _flwr_clientapp(files, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(files.bin / "flwr-clientapp"), *argv], capture_output=True, text=True, timeout=60)


def test_a_launch_runs_in_a_forked_process_and_its_exit_code_comes_back(warm):
    files, launcher, argv_file = warm
    assert stat.S_IMODE(files.folder.stat().st_mode) == 0o700
    result = _flwr_clientapp(files, ARGV)
    assert result.returncode == 3, result.stderr
    assert argv_file.read_text() == " ".join(["flwr-clientapp", *ARGV])
    assert launcher.poll() is None  # the launcher itself serves on


def test_a_launch_for_another_address_is_refused(warm):
    files, _, argv_file = warm
    result = _flwr_clientapp(files, ["--runtime-api-address", "10.0.0.9:80", "--token", TOKEN])
    assert result.returncode == 2
    assert "refused this launch" in result.stderr and "not this node's" in result.stderr
    assert not argv_file.exists()


def test_without_a_launcher_flowers_own_clientapp_starts_cold(warm):
    files, launcher, argv_file = warm
    launcher.send_signal(signal.SIGTERM)
    launcher.wait(timeout=10)
    deadline = time.monotonic() + 10
    while files.socket.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not files.socket_folder.exists()  # the launcher removes its socket and that folder on the way out
    result = _flwr_clientapp(files, ARGV)
    assert result.returncode == 0
    assert result.stdout.strip() == " ".join(["cold", *ARGV])
    assert "not answering" in result.stderr and not argv_file.exists()


def test_a_link_is_refused_and_a_deep_folder_keeps_its_socket_short(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError, match="is a link or a file"):
        prepare_warm_clientapp(tmp_path / "link", "/bin/true")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    deep = tmp_path / ("x" * 120) / "clientapp"  # a long working folder: the socket lives elsewhere
    files = prepare_warm_clientapp(deep, "/bin/true")
    assert len(str(files.socket)) < 100 and stat.S_IMODE(files.socket_folder.stat().st_mode) == 0o700
    assert (deep / "bin" / "flwr-clientapp").is_file()
    files.socket_folder.rmdir()
