"""Flower's SuperLink behind :class:`~stamen.simulations.deploy.gate.OperatorGate`, on a control and a fleet address.

``python -m stamen.simulations.deploy.gated_superlink --fleet-host ADDR <flower-superlink flags>``
starts the very app ``flower-superlink`` starts (same flags, same state, same
lifespan: the SuperExec that launches ServerApps), with two differences:

- it listens on the fleet address *and* on ``--host`` (the control address, loopback
  unless told otherwise), the same port on both; ``--host`` stays what Flower thinks
  it listens on, so the ServerApp dials its Runtime API there;
- the gate admits Control and Runtime API requests only on connections to the
  control address; SuperNodes' Fleet API requests are admitted on both;
- a SuperNode's pull that finds no message is held up to a few seconds until one
  arrives (:mod:`stamen.simulations.deploy.long_poll`), instead of sending the SuperNode
  into Flower's fixed 3 s nap before it asks again;
- a pulled message is handed out once its objects are in
  (:mod:`stamen.simulations.deploy.ready_messages`), instead of sending the receiver into
  Flower's 1 s object-pull back-off.

A fleet address of ``0.0.0.0``/``::`` is one listening socket for every interface
(loopback included); the gate still tells the two apart by the address each
connection was made to.

It builds Flower's SuperLink app through :mod:`stamen.simulations.flower_internals.superlink`
(Flower 1.42 has no public way to split its APIs over addresses), which refuses, in one
line, a Flower other than the one it was written for.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import socket
import sys

from stamen.simulations.deploy.gate import OperatorGate
from stamen.simulations.deploy.long_poll import HOLD, FleetLongPoll
from stamen.simulations.deploy.ready_messages import MessagesReady


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ipaddress.ip_address(host.strip("[]")).version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.set_inheritable(True)
    return sock


class PortInUse(RuntimeError):
    """The SuperLink cannot listen on its port at one of its addresses; the message says which and what to do."""


def _why(problem: OSError, host: str, port: int) -> str | None:
    if problem.errno == errno.EADDRINUSE:
        return f"port {port} is in use on {host} (another SuperLink?): stop what listens there or choose another --port"
    if problem.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this host: give one of its own"
    if problem.errno == errno.EACCES:
        return f"port {port} on {host} needs privileges: choose a port above 1023"
    return None


def listening_sockets(control_host: str, fleet_host: str, port: int) -> list[socket.socket]:
    """One socket on a wildcard fleet address, else one per distinct address; :class:`PortInUse` if one cannot be."""
    fleet = ipaddress.ip_address(fleet_host.strip("[]"))
    hosts = [fleet_host] if fleet.is_unspecified else list(dict.fromkeys([control_host, fleet_host]))
    sockets: list[socket.socket] = []
    for host in hosts:
        try:
            sockets.append(_bind(host, port))
        except OSError as problem:
            for sock in sockets:
                sock.close()
            why = _why(problem, host, port)
            if why is None:
                raise
            raise PortInUse(why) from None
    return sockets


def check_free(control_host: str, fleet_host: str, port: int) -> None:
    """Raise :class:`PortInUse` unless the SuperLink could listen on ``port`` at its addresses now."""
    for sock in listening_sockets(control_host, fleet_host, port):
        sock.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], add_help=False)
    parser.add_argument("--fleet-host", required=True, help="address SuperNodes connect to")
    own, flower_args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)

    # Flower's own parsing (it reads sys.argv): flags, TLS files, log file, state, isolation.
    import uvicorn

    try:
        # on use: flwr stays out of this module's import
        from stamen.simulations.flower_internals.superlink import superlink_app, superlink_config, uvicorn_log_config
    except RuntimeError as problem:  # another Flower than the adapter's: its one line
        sys.exit(f"stamen gated SuperLink: {problem}")

    sys.argv = [sys.argv[0], *flower_args]
    config = superlink_config()
    try:
        sockets = listening_sockets(config.host, own.fleet_host, config.port)
    except PortInUse as problem:
        sys.exit(f"stamen gated SuperLink: {problem}")  # one line, exit 1 (stamen deploy checks it first: exit 2)
    app = OperatorGate(FleetLongPoll(MessagesReady(superlink_app(config))), control_hosts=[config.host])
    print(
        f"stamen gated SuperLink: Fleet API on {own.fleet_host}:{config.port}, "
        f"Control and Runtime APIs only on {config.host}:{config.port}; empty message pulls held up to {HOLD:.0f} s, "
        "pulled messages handed out once their objects are in",
        flush=True,
    )
    server = uvicorn.Server(
        uvicorn.Config(
            app=app,
            reload=False,
            access_log=True,
            log_config=uvicorn_log_config(),
            ssl_keyfile=config.ssl_keyfile,
            ssl_certfile=config.ssl_certfile,
            workers=1,
        )
    )
    server.run(sockets=sockets)


if __name__ == "__main__":
    main()
