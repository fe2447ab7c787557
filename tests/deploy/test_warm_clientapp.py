"""The warm ClientApp launcher and the ``flwr-clientapp`` stand-in, without Flower or PyTorch.

A launcher process runs :class:`~stamen.simulations.deploy.clientapp_launcher.Launcher` with
a stand-in entry point (it records its arguments and exits with code 3); the
``flwr-clientapp`` script :func:`prepare_warm_clientapp` writes is run as Flower's
SuperExec would run it. A resident launcher serves its launches in itself (its task
replaced by a stand-in too); a whole deployment served that way (TLS, node auth, a
lost node resuming) is ``tests/deploy/test_local_deployment.py``.
"""

import importlib
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stamen.simulations.deploy.clientapp_launcher import Refused, check_arguments, remove_socket
from stamen.simulations.deploy.resident_clientapp import TaskArguments, forget_modules_under
from stamen.simulations.deploy.warm_clientapp import prepare_warm_clientapp

PORT = 49321
TOKEN = "ab" * 32
ARGV = ["--runtime-api-address", f"127.0.0.1:{PORT}", "--token", TOKEN, "--insecure", "--parent-pid", "1"]

LAUNCHER = """
import sys
from stamen.simulations.deploy.clientapp_launcher import serve_on

socket_path, port, argv_file = sys.argv[1:4]

def entry():
    with open(argv_file, "w") as out:
        out.write(" ".join(sys.argv))
    sys.exit(3)

serve_on(socket_path, int(port), lambda: entry)
"""

# A resident launcher whose "task" writes its process id and the arguments, then exits with 5.
RESIDENT_LAUNCHER = """
import os, sys
from stamen.simulations.deploy import clientapp_launcher
from stamen.simulations.deploy.resident_clientapp import ResidentClientApp

socket_path, port, record = sys.argv[1:4]

def serve(self, argv):
    with open(record, "a") as out:
        out.write(f"{os.getpid()} {' '.join(argv)}\\n")
    return 5

ResidentClientApp.serve = serve
clientapp_launcher.serve_on(socket_path, int(port), lambda: None, resident=True)
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


def _start_launcher(tmp_path, script: str):
    """A launcher running ``script`` (socket, port and a record file as arguments); its files, process, record."""
    real = tmp_path / "real-flwr-clientapp"  # stands for Flower's executable: a cold start
    real.write_text('#!/bin/sh\necho cold "$@"\n')
    real.chmod(stat.S_IRWXU)
    files = prepare_warm_clientapp(tmp_path / "clientapp", str(real))
    record = tmp_path / "argv.txt"
    launcher = subprocess.Popen(
        [sys.executable, "-c", script, str(files.socket), str(PORT), str(record)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    deadline = time.monotonic() + 30
    while not files.socket.exists():
        assert launcher.poll() is None and time.monotonic() < deadline, "the launcher did not start listening"
        time.sleep(0.05)
    return files, launcher, record


def _stop_launcher(files, launcher) -> None:
    if launcher.poll() is None:
        launcher.kill()
        launcher.wait(timeout=10)
    remove_socket(str(files.socket))


@pytest.fixture
def warm(tmp_path):
    files, launcher, record = _start_launcher(tmp_path, LAUNCHER)
    yield files, launcher, record
    _stop_launcher(files, launcher)


@pytest.fixture
def resident(tmp_path):
    files, launcher, record = _start_launcher(tmp_path, RESIDENT_LAUNCHER)
    yield files, launcher, record
    _stop_launcher(files, launcher)


def _flwr_clientapp(files, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(files.bin / "flwr-clientapp"), *argv], capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_a_launch_runs_in_a_forked_process_and_its_exit_code_comes_back(warm):
    files, launcher, argv_file = warm
    assert stat.S_IMODE(files.folder.stat().st_mode) == 0o700
    result = _flwr_clientapp(files, ARGV)
    assert result.returncode == 3, result.stderr
    assert argv_file.read_text() == " ".join(["flwr-clientapp", *ARGV])
    assert launcher.poll() is None  # the launcher itself serves on


@pytest.mark.slow
def test_a_launch_for_another_address_is_refused(warm):
    files, _, argv_file = warm
    result = _flwr_clientapp(files, ["--runtime-api-address", "10.0.0.9:80", "--token", TOKEN])
    assert result.returncode == 2
    assert "refused this launch" in result.stderr and "not this node's" in result.stderr
    assert not argv_file.exists()


@pytest.mark.slow
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


def test_task_arguments_are_read_and_the_ones_it_cannot_serve_refused(tmp_path):
    task = TaskArguments.parse(ARGV)
    assert (task.runtime_api_address, task.token, task.insecure, task.root_certificates) == (
        f"127.0.0.1:{PORT}",
        TOKEN,
        True,
        None,
    )
    with_tls = TaskArguments.parse([*ARGV[:4], "--root-certificates", str(tmp_path / "ca.pem")])
    assert not with_tls.insecure and with_tls.root_certificates == tmp_path / "ca.pem"
    with pytest.raises(ValueError, match="runtime dependencies"):
        TaskArguments.parse([*ARGV, "--allow-runtime-dependency-installation"])
    with pytest.raises(ValueError, match="contradict"):
        TaskArguments.parse([*ARGV, "--root-certificates", "ca.pem"])


@pytest.mark.slow
def test_every_launch_is_served_in_the_launcher_itself(resident):
    files, launcher, record = resident
    assert files.resident and "--resident" in files.launcher_command(PORT)
    for _ in range(2):
        result = _flwr_clientapp(files, ARGV)
        assert result.returncode == 5, result.stderr
    assert record.read_text().splitlines() == [f"{launcher.pid} {' '.join(ARGV)}"] * 2
    assert launcher.poll() is None


@pytest.mark.slow
def test_a_launch_it_cannot_serve_goes_to_flowers_own_clientapp(resident):
    files, _, record = resident
    argv = [*ARGV, "--allow-runtime-dependency-installation"]
    result = _flwr_clientapp(files, argv)
    assert result.returncode == 0
    assert result.stdout.strip() == " ".join(["cold", *argv])
    assert "runtime dependencies" in result.stderr
    assert not record.exists()


def test_a_new_bundle_does_not_run_the_old_bundles_modules(tmp_path, monkeypatch):
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, answer in ((old, "old"), (new, "new")):
        (folder / "stamen_probe_pkg").mkdir(parents=True)
        (folder / "stamen_probe_pkg" / "__init__.py").write_text("")
        (folder / "stamen_probe_pkg" / "app.py").write_text(f"ANSWER = {answer!r}\n")
    monkeypatch.setattr(sys, "path", [str(old), *sys.path])
    assert importlib.import_module("stamen_probe_pkg.app").ANSWER == "old"

    dropped = forget_modules_under(old)

    assert sorted(dropped) == ["stamen_probe_pkg", "stamen_probe_pkg.app"]
    assert str(old) not in sys.path and "pytest" in sys.modules  # what lies elsewhere stays imported
    sys.path.insert(0, str(new))
    try:
        assert importlib.import_module("stamen_probe_pkg.app").ANSWER == "new"
    finally:
        forget_modules_under(new)


# A launcher's stop handler, signalled again while its exit runs its clean-up (as PyTorch's atexit finalizers do).
SIGNALLED_TWICE = """
import atexit, os, signal, time
from stamen.simulations.deploy.clientapp_launcher import stop_once

def clean_up():
    os.kill(os.getpid(), signal.SIGTERM)  # the second signal, in the middle of the exit
    time.sleep(0.2)
    print("clean-up finished", flush=True)

atexit.register(clean_up)
signal.signal(signal.SIGTERM, stop_once)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(5)
print("not stopped", flush=True)
"""


@pytest.mark.slow
def test_a_second_stop_signal_does_not_interrupt_the_launchers_exit():
    done = subprocess.run([sys.executable, "-c", SIGNALLED_TWICE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean-up finished"
    assert "Traceback" not in done.stderr, done.stderr
