"""Ctrl-C (or SIGTERM) on ``stamen deploy local``: every process it started and every namespace it made
are gone within 10 s."""

import signal
import subprocess
import sys
import time

import psutil
import pytest

from stamen.simulations.deploy.netns import namespaces_available


def _command_line(process: psutil.Process) -> list[str]:
    """A process's command line; nothing for one that has just ended (a zombie until reaped)."""
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return []


def _namespace_of(pid: int) -> str:
    result = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True)
    return result.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_run_leaves_no_process_and_no_namespace(tmp_path, signum):
    run_config = "num-server-rounds=200 csbm-nodes=300 local-epochs=1 min-clients=2"
    command = ["deploy", "local", "--workdir", str(tmp_path / "work"), "--clients", "2", "-c", run_config]
    with open(tmp_path / "out.log", "wb") as log:
        stamen = subprocess.Popen([sys.executable, "-m", "stamen.cli.main", *command], stdout=log, stderr=log)
    try:
        root = psutil.Process(stamen.pid)
        deadline = time.monotonic() + 300
        while True:  # mid-run: the operator's `flwr run` is streaming and a ServerApp has started
            tree = root.children(recursive=True)
            names = " ".join(" ".join(_command_line(p)) for p in tree)
            if "flwr run" in names and "flwr-serverapp" in names:
                break
            assert stamen.poll() is None and time.monotonic() < deadline, (tmp_path / "out.log").read_text()[-3000:]
            time.sleep(1.0)
        tree = root.children(recursive=True)
        namespaces = {_namespace_of(p.pid) for p in tree} - {""}
        assert len(tree) >= 4  # SuperLink, 2 SuperNodes, flwr run, and what they started
        available, why = namespaces_available()
        assert bool(namespaces) == available  # the nodes run in namespaces exactly when the machine has them

        signalled = time.monotonic()
        stamen.send_signal(signum)
        try:
            code = stamen.wait(timeout=10)
        finally:
            print(f"stamen exited {time.monotonic() - signalled:.1f} s after the signal")
        assert code == 130
        _, alive = psutil.wait_procs(tree, timeout=max(0.0, signalled + 10 - time.monotonic()))
        assert alive == [], [" ".join(_command_line(p)) for p in alive]
        assert "interrupted" in (tmp_path / "out.log").read_text()
        if not available:  # the processes were checked; the namespaces' removal cannot be here
            pytest.skip(f"every process ended; no network namespaces to check: {why}")
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert not [name for name in namespaces if name in listed]
    finally:
        if stamen.poll() is None:  # the test failed: do not leave the deployment running
            stamen.send_signal(signal.SIGTERM)
            stamen.wait(timeout=30)
