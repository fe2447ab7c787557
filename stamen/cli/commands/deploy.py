"""``stamen deploy``: run the Stamen app on several machines (SuperLink + SuperNodes, TLS, node auth).

Subcommands, in the order an operator uses them:

- ``certs``: a CA, the SuperLink's certificate for its host names/IPs, a key pair per SuperNode;
- ``partition``: each client's subgraph into its own folder, to copy to that client's host;
- ``superlink``: start the SuperLink with TLS and SuperNode authentication (foreground):
  SuperNodes connect on ``--host``, runs are submitted only on ``--control-host``
  (the SuperLink host's loopback unless told otherwise);
- ``register``: register SuperNodes' public keys with the SuperLink (on its host);
- ``supernode``: start one SuperNode with its key, the CA and its node config (foreground),
  with its warm ClientApp launcher beside it (:mod:`stamen.simulations.deploy.warm_clientapp`);
- ``run``: ``flwr run`` of the app against the SuperLink (on its host), streaming the logs;
- ``local``: all of the above on this machine (network namespaces as hosts when root).

The graph and model libraries are imported by the steps that need them only, so that
``superlink``, ``register`` and ``supernode`` check their input in a second and start
nothing when it is wrong. Output folders are validated before anything is written; key material and exported
partitions are never overwritten, and ``local`` deletes only what it created itself
(:mod:`stamen.simulations.deploy.workdir`).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from stamen.common.options import renamed
from stamen.common.registry import check_engine
from stamen.contract.plugins import plugin_choices
from stamen.contract.run_config import RunConfig
from stamen.simulations import lifetime
from stamen.simulations.deploy.certs import (
    DeploymentFiles,
    check_certificate,
    check_node_key,
    check_tls_key,
    make_certificates,
)
from stamen.simulations.deploy.gated_superlink import check_free
from stamen.simulations.deploy.local import SUPERLINK_PORT, LocalDeployment, interrupted_by_sigterm
from stamen.simulations.deploy.processes import (
    flower_tool,
    register_supernode,
    run_status,
    superlink_command,
    supernode_command,
    supernode_environment,
    write_connection,
)
from stamen.simulations.deploy.stopped_run import STOPPED, stopped_from_outside
from stamen.simulations.deploy.warm_clientapp import CLIENTAPPS, add_clientapps_option, prepare_warm_clientapp
from stamen.simulations.deploy.workdir import check_output_folder, held_workdir
from stamen.simulations.errors import RunFailed
from stamen.simulations.flower import flower_environment, flower_state, flwr_run, run_config_overrides
from stamen.simulations.flower_internals import check_flower_version
from stamen.simulations.overrides import parse_overrides
from stamen.simulations.run_follow import RunIdSink, follow_run
from stamen.simulations.size_check import check_size

OPERATOR_HOME = flower_state() / "deploy"  # the operator's FLWR_HOME: the SuperLink connection


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("deploy", help="run on several machines: certificates, SuperLink, SuperNodes")
    commands = parser.add_subparsers(dest="deploy_command", required=True, metavar="STEP")

    certs = commands.add_parser("certs", help="make a CA, the SuperLink's certificate and SuperNode key pairs")
    certs.add_argument("--out", type=Path, required=True, help="new folder for the files")
    certs.add_argument(
        "--host", action="append", required=True, help="a host name or IP the SuperLink is reached under (repeat)"
    )
    certs.add_argument("--clients", dest="nodes", type=int, required=True, help="number of SuperNode key pairs")
    renamed(certs, "--nodes", "--clients")
    certs.set_defaults(func=certs_main)

    partition = commands.add_parser("partition", help="write each client's subgraph to <out>/node-<i>/")
    partition.add_argument("--out", type=Path, required=True)
    partition.add_argument("--clients", dest="nodes", type=int, required=True, help="number of SuperNodes K")
    renamed(partition, "--nodes", "--clients")
    partition.add_argument("--run-config", "-c", action="append", default=[], help="run-config overrides")
    partition.set_defaults(func=partition_main)

    superlink = commands.add_parser("superlink", help="start the SuperLink (TLS, SuperNode authentication)")
    superlink.add_argument("--certs", type=Path, required=True, help="folder made by `stamen deploy certs`")
    superlink.add_argument(
        "--host",
        default="127.0.0.1",
        help="IP address SuperNodes connect to (default 127.0.0.1; 0.0.0.0 for every interface, only if you mean it)",
    )
    superlink.add_argument(
        "--control-host",
        default="127.0.0.1",
        help="IP address on which runs are submitted and nodes registered (default: this host's loopback only)",
    )
    superlink.add_argument("--port", type=_port, default=SUPERLINK_PORT)
    superlink.add_argument("--state", type=Path, default=Path("superlink-state.db"), help="state database file")
    superlink.set_defaults(func=superlink_main)

    register = commands.add_parser("register", help="register SuperNodes' public keys with the SuperLink")
    _connection_arguments(register)
    register.add_argument("public_keys", nargs="+", type=Path, help="node-<i>.pub files")
    register.set_defaults(func=register_main)

    supernode = commands.add_parser("supernode", help="start one SuperNode")
    supernode.add_argument("--superlink", required=True, help="the SuperLink's HOST:PORT")
    supernode.add_argument("--ca", type=Path, required=True, help="the deployment's ca.pem")
    supernode.add_argument("--key", type=Path, required=True, help="this node's private key (node-<i>.key)")
    supernode.add_argument("--partition-id", type=int, required=True)
    supernode.add_argument("--num-partitions", type=int, required=True)
    supernode.add_argument("--data-root", default="", help="this host's data folder (e.g. from `deploy partition`)")
    supernode.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    supernode.add_argument("--port", type=_port, default=9094, help="local port of the ClientApp runtime API")
    add_clientapps_option(supernode)
    supernode.set_defaults(func=supernode_main)

    run = commands.add_parser("run", help="flwr run the app against the SuperLink")
    _connection_arguments(run)
    run.add_argument("--run-config", "-c", action="append", default=[], help="run-config overrides")
    run.set_defaults(func=run_main)

    local = commands.add_parser("local", help="a whole deployment on this machine (namespaces when root)")
    local.add_argument("--clients", dest="nodes", type=int, default=3, help="number of SuperNodes (default 3)")
    renamed(local, "--nodes", "--clients")
    local.add_argument("--run-config", "-c", action="append", default=[], help="run-config overrides")
    local.add_argument("--workdir", type=Path, default=flower_state() / "deploy-local")
    local.add_argument("--loopback", action="store_true", help="no namespaces: every host on 127.0.0.1")
    add_clientapps_option(local)
    local.set_defaults(func=local_main)


def _connection_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--superlink",
        default=f"127.0.0.1:{SUPERLINK_PORT}",
        help="the SuperLink's control HOST:PORT (default: this host's loopback; run on the SuperLink host "
        "or through an SSH tunnel to it)",
    )
    parser.add_argument("--ca", type=Path, required=True, help="the deployment's ca.pem")


def _port(text: str) -> int:
    """A TCP port, 1 to 65535 (argparse's one-line error otherwise)."""
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a whole number from 1 to 65535, got {text!r}")
    return port


def _checked_config(texts: list[str], here: bool = False) -> RunConfig:
    """The run config of ``--run-config``, parsed here (:meth:`RunConfig.from_mapping`), checked once; ``here``:
    the graph is built on this machine, so its size is checked against this machine's memory first."""
    # on use: torch, torch_geometric stay out of this module's import
    from stamen.simulations.preflight import check_config

    config = check_config(RunConfig.from_mapping(parse_overrides(texts)))
    check_engine(plugin_choices(config), "deployment")  # its SuperNodes load plug-ins from entry points alone
    if here:
        check_size(config)
    return config


@dataclass(frozen=True)
class Deployed:
    """A deployed run that ended: Flower's exit code (0: it finished), its run id (``None``: it never started),
    and the run directory its ServerApp writes (``<output-dir>/<run-name>`` on the SuperLink's host)."""

    code: int
    flower_run_id: int | None
    output_dir: str
    run_name: str

    @property
    def run_dir(self) -> Path | None:
        """The run directory, where the config names it (``None``: a generated name, the ServerApp's own)."""
        return Path(self.output_dir) / self.run_name if self.run_name else None


def _require(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} not found")
    return path


def _ip(text: str, flag: str) -> str:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(
            f"{flag} {text!r} is not an IP address; give the address to listen on (e.g. 10.0.0.5)"
        ) from None
    return text


def certs_main(args: argparse.Namespace) -> int:
    check_output_folder(args.out, "--out")
    # The ServerApp reaches its SuperLink's Runtime API on the host's loopback, over TLS.
    hosts = list(dict.fromkeys([*args.host, "127.0.0.1", "localhost"]))
    files = make_certificates(args.out, hosts, args.nodes)
    print(f"CA (give to every SuperNode and flwr user): {files.ca_certificate}")
    print(f"SuperLink certificate for {', '.join(args.host)}: {files.superlink_certificate} (+ .key, keep on its host)")
    print(f"SuperNode keys: {files.node_private_key(0).parent}/node-<i>.key (one per host), node-<i>.pub (register)")
    return 0


def partition_main(args: argparse.Namespace) -> int:
    # on use: torch, torch_geometric, scipy, numpy stay out of this module's import
    from stamen.graphs.node_data import PARTITION_FILE, export_partitions

    out = check_output_folder(args.out, "--out")
    existing = []
    for index in range(args.nodes):
        folder = out / f"node-{index}"
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise ValueError(f"{folder} is a link or a file; give a new or empty --out")
        if os.path.lexists(folder / PARTITION_FILE):
            existing.append(str(folder / PARTITION_FILE))
    if existing:
        raise FileExistsError(f"{existing[0]} exists ({len(existing)} in all); give a new or empty --out")
    config = _checked_config(args.run_config, here=True)
    for path in export_partitions(config.federation(args.nodes), args.out):
        print(path)
    print("copy node-<i>/ to SuperNode i's host and pass data-root='<that folder>' in its node config")
    return 0


def superlink_main(args: argparse.Namespace) -> int:
    """Check the files and the port, then run the SuperLink in the foreground (it dies with this command)."""
    check_flower_version()  # the gated SuperLink is built by the Flower adapter: another Flower, one line, now
    files = DeploymentFiles(args.certs)
    check_certificate(files.ca_certificate, "the CA certificate ca.pem", "--certs")
    check_certificate(files.superlink_certificate, "the SuperLink certificate superlink.pem", "--certs")
    check_tls_key(files.superlink_key, "--certs")
    host, control = _ip(args.host, "--host"), _ip(args.control_host, "--control-host")
    if ipaddress.ip_address(control).is_unspecified:
        raise ValueError("--control-host must be one address (default 127.0.0.1), not every interface")
    check_free(control, host, args.port)  # a busy port: one line, before anything starts
    home = flower_state() / "superlink"
    home.mkdir(parents=True, exist_ok=True)  # Flower's state and the SuperLink's log live here
    command = superlink_command(
        files, host, args.port, args.state.resolve(), home / "superlink.log", control_host=control
    )
    return lifetime.foreground(lifetime.start(command, env=flower_environment(home)))


def register_main(args: argparse.Namespace) -> int:
    write_connection(OPERATOR_HOME, args.superlink, _require(args.ca, "CA certificate"))
    for key in args.public_keys:
        node_id = register_supernode(OPERATOR_HOME, _require(key, "public key"), key.stem)
        print(json.dumps({"public-key": str(key), "node-id": node_id}))
    return 0


def check_supernode(args: argparse.Namespace) -> None:
    """Everything ``deploy supernode`` can check before it starts a process; one-line errors (exit 2)."""
    if args.clientapps == "resident":  # served through the Flower adapter: another Flower, one line, now
        check_flower_version()
    if args.num_partitions < 1:
        raise ValueError(f"--num-partitions {args.num_partitions}: give the number of SuperNodes (1 or more)")
    if not 0 <= args.partition_id < args.num_partitions:
        raise ValueError(
            f"--partition-id {args.partition_id} is not in [0, {args.num_partitions}) "
            f"(--num-partitions {args.num_partitions}); partitions are numbered from 0"
        )
    check_certificate(args.ca, "the deployment's CA certificate ca.pem", "--ca")
    check_node_key(args.key, "--key")
    if args.data_root and not Path(args.data_root).is_dir():
        raise FileNotFoundError(f"--data-root {args.data_root}: no such folder")
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", args.port))
        except OSError as problem:
            raise RuntimeError(
                f"--port {args.port}: the ClientApp runtime port is in use on 127.0.0.1 ({problem.strerror}; "
                "another SuperNode on this host?): choose another --port"
            ) from None


def supernode_main(args: argparse.Namespace) -> int:
    """Check everything, then run the SuperNode (and its warm ClientApp launcher) until it exits.

    Both are started under reapers (:mod:`stamen.simulations.lifetime`): they die with this
    command, also of ``kill -9``; the launcher is stopped when the SuperNode ends.
    """
    check_supernode(args)
    config: dict[str, object] = {
        "partition-id": args.partition_id,
        "num-partitions": args.num_partitions,
        "device": args.device,
    }
    if args.data_root:
        config["data-root"] = str(Path(args.data_root).resolve())
    home = flower_state() / f"supernode-{args.partition_id}"
    home.mkdir(parents=True, exist_ok=True)
    env = supernode_environment(home)
    launchers = []
    if args.clientapps != "cold":
        warm = prepare_warm_clientapp(
            home.parent / f"clientapp-{args.partition_id}",
            flower_tool("flwr-clientapp", home),
            resident=args.clientapps == "resident",
        )
        remove = [warm.socket, warm.socket_folder]  # should the launcher be killed before it removes them
        launchers.append(lifetime.start(warm.launcher_command(args.port), env=env, remove=remove))
        env = warm.supernode_environment(env)
    try:
        node = lifetime.start(supernode_command(args.superlink, args.ca, args.key, config, args.port, home), env=env)
    except BaseException:
        for launcher in launchers:
            lifetime.stop(launcher)
        raise
    return lifetime.foreground(node, companions=launchers)


def run_main(args: argparse.Namespace) -> int:
    return deploy_run(_checked_config(args.run_config), args.superlink, args.ca).code


def deploy_run(config: RunConfig, superlink: str, ca: Path, stream: bool = True) -> Deployed:
    """``flwr run`` of ``config`` against the SuperLink at ``superlink`` (its control HOST:PORT, ``ca`` its CA),
    followed to the run's end; ``stream``: its log on stdout. A run stopped from outside is recorded as such and
    raised (:func:`stopped_from_outside`); another failure is the result's ``code``."""
    write_connection(OPERATOR_HOME, superlink, _require(ca, "CA certificate"))
    started = RunIdSink()
    code = flwr_run(OPERATOR_HOME, run_config_overrides(config), {}, watchers=[started])
    if code != 0 or started.run_id is None:
        return Deployed(code, started.run_id, config.output_dir, config.run_name)
    run_id = started.run_id  # followed to its end: flwr run's log stream can end first (stamen.simulations.run_follow)
    seen: list[str] = []  # the SuperLink's answers, the last one the run's end

    def status() -> str:
        seen.append(run_status(OPERATOR_HOME, run_id))
        return seen[-1]

    code = follow_run(status, run_id, [sys.stdout] if stream else [])
    if code != 0 and seen and seen[-1] == STOPPED:  # flwr stop: the ServerApp ended before it could record its end
        raise stopped_from_outside(config.output_dir, config.run_name, run_id)
    return Deployed(code, run_id, config.output_dir, config.run_name)


def local_main(args: argparse.Namespace) -> int:
    config = _checked_config(args.run_config, here=True)
    deploy_local(config, args.nodes, args.workdir, loopback=args.loopback, clientapps=args.clientapps)
    return 0


def deploy_local(
    config: RunConfig,
    nodes: int,
    workdir: Path,
    *,
    loopback: bool = False,
    clientapps: str = "resident",
    stream: bool = True,
) -> Deployed:
    """A whole deployment of ``nodes`` SuperNodes on this machine in ``workdir`` (network namespaces as hosts
    when root, unless ``loopback``), the run of ``config`` on it, then every process stopped; ``stream``: the
    run's log on the terminal. Raises :class:`RunFailed` for a run that did not finish."""
    # on use: torch, torch_geometric stay out of this module's import
    from stamen.graphs.node_data import export_partitions

    if config.min_clients > nodes:
        raise ValueError(f"min-clients={config.min_clients} exceeds --clients={nodes}; give more --clients")
    if clientapps not in CLIENTAPPS:
        raise ValueError(f"clientapps must be one of {', '.join(CLIENTAPPS)}, got {clientapps!r}")
    # SIGTERM, like Ctrl-C, stops every process started here; the workdir is this deployment's alone
    # (a second `deploy local` on it is refused naming this one) and is checked before anything is removed
    with interrupted_by_sigterm(), held_workdir(workdir) as folder:
        spec = config.federation(nodes)
        roots = [path.parent for path in export_partitions(spec, folder / "data")]
        with LocalDeployment(
            folder,
            nodes,
            node_config={"device": config.device},
            data_roots=roots,
            use_namespaces=False if loopback else None,
            clientapps=clientapps,
        ) as deployment:
            started = RunIdSink()
            code = deployment.run(run_config_overrides(config), stream=stream, started=started)
            stopped = code != 0 and started.run_id is not None and deployment.run_end(started.run_id) == STOPPED
    if stopped and started.run_id is not None:  # flwr stop: the ServerApp ended before it could record its end
        raise stopped_from_outside(config.output_dir, config.run_name, started.run_id)
    if code != 0:
        raise RunFailed(f"the deployed run failed or was stopped (flwr exit code {code}); logs in {folder / 'logs'}")
    return Deployed(code, started.run_id, config.output_dir, config.run_name)
