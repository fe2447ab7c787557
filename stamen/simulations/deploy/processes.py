"""Flower's deployment processes with Stamen's flags: SuperLink, SuperNodes, ``flwr`` calls.

The functions here build the command lines (TLS, SuperNode authentication, node
config) so that ``stamen deploy`` and the tests start exactly the same processes.
:class:`Service` runs one of them in its own process group, optionally inside a
network namespace, and stops the whole group by its PID. Every process here is started
under a reaper (:mod:`stamen.simulations.lifetime`): it and all it starts die with the command
that started it, ``kill -9`` included.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from stamen.server.runlog import strip_ansi
from stamen.simulations import lifetime
from stamen.simulations.deploy.certs import DeploymentFiles
from stamen.simulations.flower import FEDERATION, flower_environment, stage_app, toml_value
from stamen.simulations.relay import relayed_call
from stamen.simulations.run_follow import RunIdSink, follow_run


def flower_tool(name: str, flwr_home: Path) -> str:
    """Absolute path of a Flower executable of this environment."""
    found = shutil.which(name, path=flower_environment(flwr_home)["PATH"])
    if found is None:
        raise FileNotFoundError(f"{name} not found: install the project (pip install -e .)")
    return found


def superlink_command(
    files: DeploymentFiles,
    fleet_host: str,
    port: int,
    database: Path,
    log_file: Path,
    control_host: str = "127.0.0.1",
) -> list[str]:
    """A SuperLink serving TLS on ``port`` that admits registered SuperNodes only.

    SuperNodes reach its Fleet API on ``fleet_host``; its Control API (run
    submission, node registration) and Runtime API answer only on connections to
    ``control_host`` (loopback by default: the operator works on the SuperLink host),
    see :mod:`stamen.simulations.deploy.gate`. ``database`` keeps its state (registered
    nodes, runs) across restarts.
    """
    return [
        sys.executable,
        "-m",
        "stamen.simulations.deploy.gated_superlink",
        "--fleet-host",
        fleet_host,
        "--ssl-ca-certfile",
        str(files.ca_certificate),
        "--ssl-certfile",
        str(files.superlink_certificate),
        "--ssl-keyfile",
        str(files.superlink_key),
        "--enable-supernode-auth",
        "--disable-runtime-dependency-installation",
        "--host",
        control_host,
        "--port",
        str(port),
        "--database",
        str(database),
        "--log-file",
        str(log_file),
    ]


def node_config_text(values: Mapping[str, object]) -> str:
    """``--node-config`` text: ``key=value`` pairs with TOML literals."""
    return " ".join(f"{key}={toml_value(value)}" for key, value in values.items())


SUPERNODE_TASK_POLL = 0.2  # seconds between a SuperNode's SuperExec's looks for a new task


def supernode_environment(flwr_home: Path) -> dict[str, str]:
    """:func:`~stamen.simulations.flower.flower_environment` for a SuperNode: its SuperExec looks for a task every
    :data:`SUPERNODE_TASK_POLL` seconds.

    Flower's default is 1 s; every ``stamen`` process gets 0.05 s, which a run's start
    needs once (the SuperLink's SuperExec, launching the ServerApp). A SuperNode's SuperExec
    asks its SuperNode every round, all run long, and each ask is a request the SuperNode
    serves: at 0.05 s, 20 SuperNodes on one 2-core machine spent over a core on them
    (benchmarks/deploy-nodes.md). At 0.2 s a round waits 0.1 s longer on average.
    """
    env = flower_environment(flwr_home)
    env["FLWR_SUPEREXEC_TASK_POLL_INTERVAL"] = str(SUPERNODE_TASK_POLL)
    return env


def supernode_command(
    superlink: str,
    ca_certificate: Path | None,
    private_key: Path | None,
    node_config: Mapping[str, object],
    port: int,
    flwr_home: Path,
) -> list[str]:
    """A SuperNode dialling ``superlink`` (host:port) over TLS, trusting ``ca_certificate``.

    ``ca_certificate=None`` leaves out ``--root-certificates`` (the system's CAs are
    trusted instead) and ``private_key=None`` leaves out authentication: both exist to
    show that such a SuperNode is refused.
    """
    command = [flower_tool("flower-supernode", flwr_home), "--superlink", superlink]
    if ca_certificate is not None:
        command += ["--root-certificates", str(ca_certificate)]
    if private_key is not None:
        command += ["--auth-supernode-private-key", str(private_key)]
    return command + ["--node-config", node_config_text(node_config), "--port", str(port)]


def write_connection(flwr_home: Path, address: str, ca_certificate: Path) -> None:
    """``FLWR_HOME/config.toml`` pointing ``flwr`` at a TLS SuperLink under the name ``stamen``."""
    flwr_home.mkdir(parents=True, exist_ok=True)
    (flwr_home / "config.toml").write_text(
        f'[superlink]\ndefault = "{FEDERATION}"\n\n'
        f'[superlink.{FEDERATION}]\naddress = "{address}"\n'
        f'root-certificates = "{Path(ca_certificate).resolve()}"\n'
    )


def _flwr(flwr_home: Path, arguments: list[str], prefix: Sequence[str]) -> subprocess.CompletedProcess:
    command = [*prefix, flower_tool("flwr", flwr_home), *arguments]
    return lifetime.run(command, env=flower_environment(flwr_home), capture_output=True, text=True, timeout=60)


def register_supernode(flwr_home: Path, public_key: Path, name: str = "", prefix: Sequence[str] = ()) -> int:
    """Register a SuperNode's public key with the SuperLink of ``config.toml``; return its node id.

    ``prefix`` runs ``flwr`` elsewhere (``ip netns exec <the SuperLink's host>``).
    """
    arguments = ["supernode", "register", str(Path(public_key).resolve()), FEDERATION, "--format", "json"]
    result = _flwr(flwr_home, arguments + (["--name", name] if name else []), prefix)
    start = result.stdout.find("{")  # --format json prints one (indented) JSON object
    reply = json.loads(result.stdout[start:]) if start >= 0 else {}
    if result.returncode != 0 or not reply.get("success"):
        detail = reply.get("error-message") or (result.stdout + result.stderr).strip()[-500:]
        raise RuntimeError(f"registering {public_key} failed: {detail}")
    return int(reply["node-id"])


def supernode_statuses(flwr_home: Path, prefix: Sequence[str] = ()) -> dict[int, str]:
    """Node id -> status (``registered``, ``online``, ``offline``) as the SuperLink sees them."""
    result = _flwr(flwr_home, ["supernode", "list", FEDERATION, "--format", "json"], prefix)
    start = result.stdout.find("{")
    reply = json.loads(result.stdout[start:]) if start >= 0 else {}
    if result.returncode != 0 or "nodes" not in reply:
        detail = reply.get("error-message") or (result.stdout + result.stderr).strip()[-500:]
        raise RuntimeError(f"flwr supernode list failed: {detail}")
    return {int(node["node-id"]): node["status"] for node in reply["nodes"]}


def flwr_run_command(flwr_home: Path, app: Path, run_config: Mapping[str, object]) -> list[str]:
    """``flwr run <app> stamen --stream`` with run-config overrides (as :func:`stamen.simulations.flower.flwr_run`)."""
    command = [flower_tool("flwr", flwr_home), "run", str(app), FEDERATION, "--stream"]
    if run_config:
        command += ["--run-config", " ".join(f"{key}={toml_value(value)}" for key, value in run_config.items())]
    return command


def run_status(flwr_home: Path, run_id: int, prefix: Sequence[str] = ()) -> str:
    """Run ``run_id``'s status as the SuperLink of ``config.toml`` reports it (``running``, ``finished:failed``...)."""
    try:
        result = _flwr(flwr_home, ["ls", FEDERATION, "--run-id", str(run_id), "--format", "json"], prefix)
    except subprocess.TimeoutExpired as error:
        raise TimeoutError(f"flwr ls did not answer within {error.timeout:.0f} s") from error
    start = result.stdout.find("{")
    reply = json.loads(result.stdout[start:]) if start >= 0 else {}
    if result.returncode != 0 or not reply.get("runs"):
        detail = reply.get("error-message") or (result.stdout + result.stderr).strip()[-500:]
        raise RuntimeError(f"flwr ls --run-id {run_id} failed: {detail}")
    return str(reply["runs"][0]["status"])


def operator_run(
    flwr_home: Path,
    run_config: Mapping[str, object],
    prefix: Sequence[str] = (),
    log_file: Path | None = None,
    echo: bool = False,
    started: RunIdSink | None = None,
) -> int:
    """``flwr run`` of the Stamen app from the operator's seat ``prefix``: its log into ``log_file`` and,
    with ``echo`` or without ``log_file``, to the terminal; without colour codes (:mod:`stamen.simulations.relay`).
    ``started`` (if given) keeps the Flower run id, for the caller to ask how the run ended.

    Returns 0 once the SuperLink reports the run ``finished:completed``, 1 for another end, flwr's
    own code when ``flwr run`` fails (:mod:`stamen.simulations.run_follow`: its log stream can end before the run).
    """
    command = [*prefix, *flwr_run_command(flwr_home, stage_app(flwr_home), run_config)]
    with contextlib.ExitStack() as files:
        sinks = [files.enter_context(open(log_file, "w"))] if log_file is not None else []
        if echo or log_file is None:
            sinks.append(sys.stdout)
        started = started or RunIdSink()
        code = relayed_call(command, [*sinks, started], env=flower_environment(flwr_home))
        if code != 0 or started.run_id is None:
            return code
        run_id = started.run_id
        return follow_run(lambda: run_status(flwr_home, run_id, prefix), run_id, sinks)


def listening(host: str, port: int) -> bool:
    """Whether ``host:port`` accepts TCP connections from here."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


class Service:
    """One long-running process in a process group of its own, logging to a file.

    ``prefix`` runs it elsewhere (``ip netns exec <ns>``); :meth:`stop` ends the whole
    group (the process and whatever it started: ServerApp, ClientApp) by its PID. The
    group is that of the process's reaper (:func:`stamen.simulations.lifetime.start`), which
    outlives it only to clear what it left behind, and kills all of it should this
    process die first.
    """

    def __init__(
        self, name: str, command: list[str], env: dict[str, str], log_file: Path, prefix=(), remove: Sequence[Path] = ()
    ) -> None:
        self.name = name
        self.command = [*prefix, *command]
        self.remove = list(remove)  # removed by the reaper once the process's tree is gone (lifetime.start)
        self.env = env
        self.log_file = log_file
        self.process: subprocess.Popen | None = None
        self._descendants: list[psutil.Process] = []

    def start(self) -> Service:
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            self.process = lifetime.start(
                self.command, env=self.env, stdout=log, stderr=subprocess.STDOUT, new_session=True, remove=self.remove
            )
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.name} was never started"
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def wait_until(self, ready, timeout: float, what: str) -> None:
        """Poll ``ready()`` until true; fail with the log's tail if the process dies or time runs out."""
        deadline = time.monotonic() + timeout
        while not ready():
            if not self.alive() or time.monotonic() > deadline:
                state = "exited" if not self.alive() else f"not {what} after {timeout:.0f} s"
                raise RuntimeError(f"{self.name} {state}; log {self.log_file}:\n{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the process's log as Stamen shows it: without colour codes (:mod:`stamen.simulations.relay`)."""
        return strip_ansi(self.log_file.read_text(errors="replace"))[-chars:] if self.log_file.exists() else ""

    def kill(self) -> None:
        """Kill at once, as a crash or a pulled cable would (SIGKILL to every process of its tree)."""
        if self.process is not None:
            lifetime.kill_tree(self.pid)
            self.process.wait(timeout=10)

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM to the group, SIGKILL after ``grace`` seconds.

        The group is signalled even when its leader has exited: a SuperNode that
        gave up leaves its SuperExec child behind, retrying.
        """
        stop_services([self], grace)

    def terminate(self) -> None:
        """Ask the whole group to stop (SIGTERM); :meth:`finish` waits and kills.

        Flower's SuperExec and the App processes it starts live in sessions of their
        own; they are noted here (the process tree as it stands), sent SIGTERM too,
        and :meth:`finish` kills any that outlive the grace period.
        """
        if self.process is None:
            return
        try:
            self._descendants = psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            self._descendants = []
        _signal_group(self.pid, signal.SIGTERM)
        for child in self._descendants:  # those in sessions of their own are asked directly
            try:
                child.terminate()
            except psutil.NoSuchProcess:
                pass

    def finish(self, deadline: float) -> None:
        """Wait for the group and its noted descendants until ``deadline`` (monotonic), then SIGKILL them."""
        if self.process is None:
            return
        descendants = self._descendants

        def running() -> bool:
            return (
                self.process.poll() is None or _group_alive(self.pid) or any(_running(child) for child in descendants)
            )

        while running() and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.process.poll() is None:
            lifetime.kill_tree(self.pid)  # the reaper and all below it (orphans reparent to the reaper)
        _signal_group(self.pid, signal.SIGKILL)
        for child in descendants:
            try:
                child.kill()  # psutil checks the PID still names the same process
            except psutil.NoSuchProcess:
                pass
        self.process.wait(timeout=5)


def stop_services(services: Sequence[Service | None], grace: float = 15.0) -> None:
    """Stop several services at once: SIGTERM to every group, one shared ``grace``, then SIGKILL."""
    started = [service for service in services if service is not None and service.process is not None]
    for service in started:
        service.terminate()
    deadline = time.monotonic() + grace
    for service in started:
        service.finish(deadline)


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
