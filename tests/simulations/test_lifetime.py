"""Every process Stamen starts dies with its command (:mod:`stamen.simulations.lifetime`), ``kill -9`` included.

A census: the processes of a tree are recorded while it runs, the command is killed with
SIGKILL, and every recorded process (and every process carrying the test's own marker in
its environment) must be gone within a bounded time. Processes are found by that marker
only; the tests never signal a process they did not start.
"""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import psutil
import pytest

from stamen.simulations import lifetime

MARK = "STAMEN_TEST_LIFETIME"
PROJECT = Path(__file__).resolve().parents[2]


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _marked(mark: str) -> list[psutil.Process]:
    """Live processes whose environment carries ``MARK=mark``: this test's, and only those."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARK) == mark and _alive(process):
                found.append(process)
        except psutil.Error:
            continue
    return found


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def _command_line(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return f"{process.pid} (gone)"


def _gone_within(processes: list[psutil.Process], mark: str, seconds: float) -> list[str]:
    """Wait until none of ``processes`` and no marked process lives; what is still alive after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        left = {p.pid: p for p in processes if _alive(p)} | {p.pid: p for p in _marked(mark)}
        if not left or time.monotonic() > deadline:
            return [_command_line(p) for p in left.values()]
        time.sleep(0.2)


def _clean_up(mark: str) -> None:
    """Kill what a failed test left behind: processes with this test's marker only."""
    for process in _marked(mark):
        try:
            process.kill()
        except psutil.Error:
            pass


def _env(mark: str) -> dict[str, str]:
    return {**os.environ, MARK: mark, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(PROJECT)}


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


# The starter under test: a process that starts, under a reaper, a command leaving an escaped
# daemon behind (a new session and a double fork, as Flower's SuperExec and Ray's daemons do:
# its parent exits at once, so no parent link leads to it from the command).
STARTER = textwrap.dedent(
    """
    import sys, time
    from stamen.simulations import lifetime
    lifetime.start(["sh", "-c", "setsid sh -c 'sleep 300 & exit 0' & sleep 300"])
    print("started", flush=True)
    time.sleep(300)
    """
)


@pytest.mark.slow
def test_kill_9_of_a_starter_takes_escaped_daemons_along():
    mark = uuid.uuid4().hex
    starter = subprocess.Popen([sys.executable, "-c", STARTER], env=_env(mark), stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 30
        while len(_marked(mark)) < 5:  # starter, reaper, sh, its sleep, the escaped sleep
            assert time.monotonic() < deadline, [_command_line(p) for p in _marked(mark)]
            time.sleep(0.1)
        recorded = _marked(mark)
        assert any(p.pid != starter.pid and os.getsid(p.pid) != os.getsid(starter.pid) for p in recorded)
        starter.kill()
        starter.wait()
        assert _gone_within(recorded, mark, 10) == []
    finally:
        _clean_up(mark)


@pytest.mark.slow
def test_a_command_that_exits_leaves_nothing_and_its_status_passes_through():
    mark = uuid.uuid4().hex
    process = lifetime.start(["sh", "-c", "setsid sleep 300 & exit 3"], env=_env(mark), grace=1.0)
    try:
        assert process.wait(timeout=30) == 3
        assert _gone_within([], mark, 5) == []
        assert lifetime.call(["sh", "-c", "kill -TERM $$"]) == -signal.SIGTERM
        assert lifetime.run(["sh", "-c", "echo out"], capture_output=True, text=True).stdout == "out\n"
    finally:
        _clean_up(mark)


@pytest.mark.slow
def test_terminate_reaches_the_command_and_kill_the_whole_tree():
    mark = uuid.uuid4().hex
    try:
        process = lifetime.start(["sleep", "300"], env=_env(mark))
        time.sleep(0.5)
        process.terminate()  # the reaper ignores SIGTERM; its command gets it through the group
        assert process.wait(timeout=10) == -signal.SIGTERM
        stubborn = lifetime.start(["sh", "-c", "trap '' TERM; setsid sleep 300 & sleep 300"], env=_env(mark))
        deadline = time.monotonic() + 10
        while len(_marked(mark)) < 4:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        stubborn.kill()
        assert stubborn.wait(timeout=10) == -signal.SIGKILL
        assert _gone_within([], mark, 5) == []
    finally:
        _clean_up(mark)


def _superlink_port(tree: list[psutil.Process]) -> int:
    for process in tree:
        argv = process.cmdline()
        if any(part.endswith("flower-superlink") for part in argv) and "--port" in argv:
            return int(argv[argv.index("--port") + 1])
    raise AssertionError("no flower-superlink in the tree: " + "; ".join(_command_line(p) for p in tree))


@pytest.mark.slow
@pytest.mark.ray
def test_kill_9_of_stamen_run_on_flower_stops_every_process_and_every_write(tmp_path):
    mark = uuid.uuid4().hex
    run_dir = tmp_path / "runs" / "killed"
    config = f"num-server-rounds=100000 csbm-nodes=300 output-dir='{tmp_path / 'runs'}' run-name='killed'"
    command = [sys.executable, "-m", "stamen.cli.main", "run", "--quiet", "--clients", "2", "-c", config]
    metrics = run_dir / "metrics.jsonl"
    with open(tmp_path / "out.log", "w") as log:
        cli = subprocess.Popen(command, env=_env(mark), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while not (metrics.is_file() and len(metrics.read_text().splitlines()) >= 3):  # in its rounds
            assert cli.poll() is None, (tmp_path / "out.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the run did not get going"
            time.sleep(0.3)
        tree = _tree(cli.pid)
        names = " ".join(_command_line(p) for p in tree)
        for part in ("flower-superexec", "flwr-simulation", "raylet", "ClientAppActor", "flwr run"):
            assert part in names, f"{part} not in the tree: the census would prove nothing"
        port = _superlink_port(tree)
        assert _listening(port)
        killed = time.monotonic()
        cli.kill()  # kill -9: the command can clean up nothing itself
        cli.wait()
        left = _gone_within(tree, mark, 20)
        print(f"{len(tree)} processes recorded, all gone {time.monotonic() - killed:.1f} s after kill -9")
        assert left == [], left
        assert not _listening(port)
        size = metrics.stat().st_size
        time.sleep(3)
        assert metrics.stat().st_size == size, "something still writes the run's metrics"
    finally:
        _clean_up(mark)
