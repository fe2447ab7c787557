"""A whole deployment on this machine: SuperLink and SuperNodes as separate hosts.

:class:`LocalDeployment` makes the certificates, a virtual LAN of network namespaces
(one host for the SuperLink, one per SuperNode; the root namespace is a further host
on the LAN), starts the SuperLink with TLS and SuperNode authentication, registers the
SuperNodes' public keys, starts the SuperNodes, and runs ``flwr run`` against it.
Each SuperNode host also runs a warm ClientApp launcher
(:mod:`stamen.simulations.deploy.warm_clientapp`) unless ``clientapps="cold"``.

The SuperLink's Fleet API listens on the LAN; its Control API (run submission, node
registration) answers only on the SuperLink host's loopback, so the operator's
``flwr`` runs inside the SuperLink's host (``ip netns exec``), as an operator on
that machine (or at the end of an SSH tunnel to it) would.

Where namespaces cannot be made (no root) it runs every host on the loopback
interface instead and says so. Every process is stopped by its PID on exit, all at
once: SIGTERM to every group, a few seconds' grace, then SIGKILL.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from stamen.simulations.deploy.certs import DeploymentFiles, make_certificates
from stamen.simulations.deploy.clientapp_launcher import remove_socket
from stamen.simulations.deploy.netns import VirtualNetwork, namespaces_available
from stamen.simulations.deploy.processes import (
    Service,
    flower_tool,
    listening,
    operator_run,
    register_supernode,
    run_status,
    stop_services,
    superlink_command,
    supernode_command,
    supernode_environment,
    supernode_statuses,
    write_connection,
)
from stamen.simulations.deploy.warm_clientapp import CLIENTAPPS, prepare_warm_clientapp
from stamen.simulations.deploy.workdir import STATE
from stamen.simulations.flower import flower_environment, free_port
from stamen.simulations.run_follow import RunIdSink

SUPERLINK_PORT = 9092  # Flower's customary Fleet port; each namespace has its own
CONTROL_HOST = "127.0.0.1"  # the Control API answers only on the SuperLink host's loopback
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL when the deployment stops


class LocalDeployment:
    """One SuperLink and ``num_nodes`` SuperNodes with TLS and node authentication.

    Args:
        workdir: where certificates, logs, state and each host's ``FLWR_HOME`` go.
        num_nodes: SuperNodes, partition ``i`` on node ``i``.
        node_config: extra node config for every SuperNode (e.g. ``device``).
        data_roots: a data root per node (e.g. from :func:`stamen.graphs.node_data.export_partitions`).
        use_namespaces: ``None`` to use them when possible, ``False`` to force loopback.
        clientapps: how each SuperNode serves its messages: ``"resident"`` (a launcher beside
            it with PyTorch, PyG and Flower imported keeps the ClientApp loaded and serves
            every message), ``"forked"`` (that launcher forks a process per message) or
            ``"cold"`` (Flower's own fresh ``flwr-clientapp`` per message).
        startup_timeout: seconds the SuperLink may take to listen, and the SuperNodes to come online
            (used by ``with``; many nodes on a loaded machine take longer).
    """

    def __init__(
        self,
        workdir: Path,
        num_nodes: int,
        node_config: Mapping[str, object] | None = None,
        data_roots: list[Path] | None = None,
        use_namespaces: bool | None = None,
        clientapps: str = "resident",
        startup_timeout: float = 120.0,
    ) -> None:
        if clientapps not in CLIENTAPPS:
            raise ValueError(f"clientapps={clientapps!r}: choose one of {', '.join(CLIENTAPPS)}")
        if data_roots is not None and len(data_roots) != num_nodes:
            raise ValueError(f"{len(data_roots)} data roots for {num_nodes} SuperNodes")
        self.workdir = Path(workdir)
        self.num_nodes = num_nodes
        self.node_config = dict(node_config or {})
        self.data_roots = data_roots
        self.clientapps = clientapps
        self.startup_timeout = startup_timeout  # seconds for the SuperLink to listen and the SuperNodes to come online
        possible, reason = namespaces_available()
        if use_namespaces and not possible:
            raise RuntimeError(f"network namespaces are unavailable: {reason}")
        self.namespaces = possible and use_namespaces is not False
        self.mode = "network namespaces" if self.namespaces else f"loopback ({reason or 'asked for'})"
        self.network: VirtualNetwork | None = None
        self.superlink: Service | None = None
        self.supernodes: list[Service] = []
        self.launchers: list[Service] = []  # the warm ClientApp launchers, beside their SuperNodes
        self._sockets: list[Path] = []  # theirs, removed on stop should one be killed before it could
        self.node_ids: list[int] = []
        self.port = 0  # the SuperLink's, chosen in start()
        self.operator_home = self.workdir / "operator"  # the FLWR_HOME of whoever runs `flwr`

    # hosts -----------------------------------------------------------------

    def _host_name(self, index: int | None) -> str:
        return "superlink" if index is None else f"node-{index}"

    def _prefix(self, index: int | None) -> list[str]:
        return self.network.exec_prefix(self._host_name(index)) if self.network else []

    @property
    def superlink_host(self) -> str:
        return self.network.address("superlink") if self.network else "127.0.0.1"

    @property
    def superlink_address(self) -> str:
        return f"{self.superlink_host}:{self.port}"

    @property
    def control_address(self) -> str:
        """Where the operator's ``flwr`` reaches the Control API: the SuperLink host's loopback."""
        return f"{CONTROL_HOST}:{self.port}"

    @property
    def operator_prefix(self) -> list[str]:
        """Runs a command as the operator: on the SuperLink's host."""
        return self._prefix(None)

    @property
    def files(self) -> DeploymentFiles:
        return DeploymentFiles(self.workdir / "certs")

    # lifecycle -------------------------------------------------------------

    def __enter__(self) -> LocalDeployment:
        try:
            self.start(self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self, startup_timeout: float = 120.0) -> None:
        print(f"stamen deploy: {self.num_nodes} SuperNodes on {self.mode}", flush=True)
        if self.namespaces:
            names = ["superlink", *(self._host_name(i) for i in range(self.num_nodes))]
            self.network = VirtualNetwork(names).__enter__()
            self.port = SUPERLINK_PORT
        else:
            self.port = free_port()
        if not self.files.ca_certificate.exists():
            # The ServerApp reaches its SuperLink's runtime API on the host itself, also over TLS.
            hosts = list(dict.fromkeys([self.superlink_host, CONTROL_HOST, "localhost"]))
            make_certificates(self.files.root, hosts, self.num_nodes)
        self.superlink = self.start_superlink()
        self.superlink.wait_until(
            lambda: listening(self.superlink_host, self.port), startup_timeout, "listening on " + self.superlink_address
        )
        write_connection(self.operator_home, self.control_address, self.files.ca_certificate)
        self.node_ids = [
            register_supernode(
                self.operator_home, self.files.node_public_key(i), self._host_name(i), self.operator_prefix
            )
            for i in range(self.num_nodes)
        ]
        self.supernodes = [self.start_supernode(i) for i in range(self.num_nodes)]
        self.wait_online(self.node_ids, startup_timeout)

    def restart_superlink(self, timeout: float = 120.0) -> None:
        """Stop the SuperLink and start it again on the same state; wait for the live SuperNodes."""
        self.superlink.stop()
        self.superlink = self.start_superlink()
        self.superlink.wait_until(lambda: listening(self.superlink_host, self.port), timeout, "listening")
        alive = [node_id for node_id, node in zip(self.node_ids, self.supernodes, strict=False) if node.alive()]
        self.wait_online(alive, timeout)

    def start_superlink(self) -> Service:
        home = self.workdir / "hosts" / "superlink" / "flwr-home"
        command = superlink_command(
            self.files,
            self.superlink_host,
            self.port,
            database=self.workdir / STATE,
            log_file=self.workdir / "logs" / "superlink.log",
            control_host=CONTROL_HOST,
        )
        return Service(
            "SuperLink", command, flower_environment(home), self.workdir / "logs" / "superlink.out", self._prefix(None)
        ).start()

    def start_supernode(
        self,
        index: int,
        ca_certificate: Path | None | bool = True,
        private_key: Path | None | bool = True,
        label: str = "",
        warm: bool | None = None,
    ) -> Service:
        """Start a SuperNode for partition ``index`` on host ``node-<index>``.

        ``ca_certificate`` and ``private_key``: ``True`` for the deployment's CA and
        the node's own key, a path for another file, ``None`` to leave the flag out.
        ``label`` names a further SuperNode on the same host (its log file). ``warm``
        (default: unless the deployment's ``clientapps`` is ``"cold"``) starts its
        ClientApp launcher first, on the same host.
        """
        config = {"partition-id": index, "num-partitions": self.num_nodes, **self.node_config}
        if self.data_roots is not None:
            config["data-root"] = str(self.data_roots[index])
        name = self._host_name(index) + (f"-{label}" if label else "")
        home = self.workdir / "hosts" / name / "flwr-home"
        port = free_port()  # the ClientApp's Runtime API, on the host's loopback
        command = supernode_command(
            self.superlink_address,
            self.files.ca_certificate if ca_certificate is True else ca_certificate,
            self.files.node_private_key(index) if private_key is True else private_key,
            config,
            port=port,
            flwr_home=home,
        )
        env = supernode_environment(home)
        if self.clientapps != "cold" if warm is None else warm:
            warm_files = prepare_warm_clientapp(
                home.parent / "clientapp", flower_tool("flwr-clientapp", home), resident=self.clientapps != "forked"
            )
            launcher_log = self.workdir / "logs" / f"{name}-launcher.log"
            self.launchers.append(
                Service(
                    f"ClientApp launcher {name}",
                    warm_files.launcher_command(port),
                    env,
                    launcher_log,
                    self._prefix(index),
                    remove=[warm_files.socket, warm_files.socket_folder],  # also after a kill -9 of this command
                ).start()
            )
            self._sockets.append(warm_files.socket)
            env = warm_files.supernode_environment(env)
        log = self.workdir / "logs" / f"{name}.log"
        return Service(f"SuperNode {name}", command, env, log, self._prefix(index)).start()

    def wait_online(self, node_ids: list[int], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                statuses: dict[int, str] | str = supernode_statuses(self.operator_home, self.operator_prefix)
            except subprocess.TimeoutExpired as error:  # a SuperLink too busy to answer (a loaded machine): ask again
                statuses = f"`flwr supernode list` did not answer within {error.timeout:.0f} s"
            if isinstance(statuses, dict) and all(statuses.get(node) == "online" for node in node_ids):
                return
            dead = [
                node
                for node, node_id in zip(self.supernodes, self.node_ids, strict=False)
                if node_id in node_ids and not node.alive()
            ]
            if dead or time.monotonic() > deadline:  # after `timeout` s, or at once when a SuperNode died
                culprit = dead[0] if dead else self.supernodes[0]
                raise RuntimeError(
                    f"SuperNodes not online ({statuses}); {culprit.name} log {culprit.log_file}:\n{culprit.log_tail()}"
                )
            time.sleep(1.0)

    def run(self, run_config: Mapping[str, object], stream: bool = False, started: RunIdSink | None = None) -> int:
        """``flwr run`` from the operator's seat; logs to ``operator/run.log``, and to the terminal with ``stream``;
        ``started`` keeps the Flower run id."""
        return operator_run(
            self.operator_home, run_config, self.operator_prefix, self.operator_home / "run.log", stream, started
        )

    def run_end(self, run_id: int) -> str:
        """How the SuperLink says run ``run_id`` stands (``finished:stopped`` ...), ``unknown`` if it cannot say."""
        try:
            return run_status(self.operator_home, run_id, self.operator_prefix)
        except (RuntimeError, TimeoutError, OSError, ValueError):
            return "unknown"

    def run_log(self) -> str:
        path = self.operator_home / "run.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop every SuperNode and the SuperLink by PID, all at once, then remove the virtual network.

        A further Ctrl-C or SIGTERM while this runs is ignored (it takes at most
        ``grace`` seconds and a few more), so that an impatient second signal cannot
        leave processes or namespaces behind.
        """
        with signals_held():
            try:
                stop_services([*self.supernodes, *self.launchers, self.superlink], grace)
                for socket_path in self._sockets:
                    remove_socket(str(socket_path))
            finally:
                if self.network is not None:
                    self.network.close()
                    self.network = None


@contextmanager
def signals_held() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM inside the block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def interrupted_by_sigterm() -> Iterator[None]:
    """Inside the block SIGTERM raises KeyboardInterrupt, as Ctrl-C does, so cleanup runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
