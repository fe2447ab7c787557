"""Ray nodes on loopback for the cluster tests: each ``ray start --block`` in a process group of its own.

A node is stopped by its own processes (:func:`stamen.simulations.lifetime.kill_tree` on its ``ray start``, then
its process group), never with ``ray stop``, which ends every Ray process of the machine's user, other
clusters and simulations included. Each node keeps its files in a temp dir of its own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from stamen.simulations import lifetime
from stamen.simulations.flower import free_port

RAY = str(Path(sys.executable).parent / "ray")
STARTED = "Ray runtime started"


def _ports() -> list[str]:
    """Ports a node would otherwise take at fixed defaults (clashing with another node or Ray on this machine)."""
    return [
        f"--ray-client-server-port={free_port()}",
        f"--dashboard-agent-listen-port={free_port()}",
        f"--metrics-export-port={free_port()}",
        f"--runtime-env-agent-port={free_port()}",
    ]


@contextlib.contextmanager
def ray_node(args: list[str], folder: Path, name: str, env: dict[str, str] | None = None) -> Iterator[None]:
    """A Ray node (``ray start --block ARGS``) until the block ends; its log in ``folder/name.log``."""
    log_path = folder / f"{name}.log"
    command = [RAY, "start", "--block", "--disable-usage-stats", "--node-ip-address=127.0.0.1", *_ports(), *args]
    with open(log_path, "w") as log:
        process = lifetime.start(command, stdout=log, stderr=subprocess.STDOUT, env=env or dict(os.environ))
    try:
        deadline = time.monotonic() + 120
        while STARTED not in log_path.read_text():
            assert process.poll() is None, f"ray start {name} ended: {log_path.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"ray start {name} did not start in 120 s: {log_path}"
            time.sleep(0.5)
        yield
    finally:
        lifetime.kill_tree(process.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # the reaper's group: anything that left the tree
        process.wait(timeout=30)


@contextlib.contextmanager
def ray_cluster(folder: Path, nodes: int = 2, cpus: int = 1, gpus: int = 0) -> Iterator[str]:
    """A head and ``nodes - 1`` more nodes on loopback, ``cpus`` CPUs (``gpus`` simulated GPUs) each; yields
    the head's ``HOST:PORT``. Temp dirs are short (Ray's socket paths are limited to about 100 characters)."""
    import tempfile

    port = free_port()
    address = f"127.0.0.1:{port}"
    resources = [f"--num-cpus={cpus}", f"--num-gpus={gpus}"]
    with contextlib.ExitStack() as stack:
        temp = stack.enter_context(tempfile.TemporaryDirectory(prefix="sr-", dir="/tmp"))
        head = ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}/0", *resources]
        stack.enter_context(ray_node(head, folder, "node-0"))
        for index in range(1, nodes):
            stack.enter_context(ray_node([f"--address={address}", *resources], folder, f"node-{index}"))
        yield address
