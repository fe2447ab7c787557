"""Operator-only admission: which SuperLink requests are served on which address.

Flower 1.42's SuperLink serves three HTTP APIs on one port: the Fleet API
(``/v1/fleet/...``, SuperNodes, signed with their registered keys when
``--enable-supernode-auth`` is on), the Control API (``/v1/control/...``: submit and
stop runs, register SuperNodes, read logs; no account check in the open-source
build) and the Runtime API (``/v1/runtime/...``: the ServerApp's own link to its
SuperLink). Its ``--control-api-address`` and ``--fleet-api-address`` flags are
deprecated and ignored. So anyone who can open a TLS connection to the port (all
that takes is the public ``ca.pem``) could submit a run, whose ServerApp then runs
on the SuperLink host and whose ClientApp runs on every SuperNode, or register a
SuperNode key of their own.

:class:`OperatorGate` wraps the SuperLink's ASGI app and admits a request when

- its path is a Fleet API path (or the health check), on any address; or
- the connection was made *to* one of the control addresses (``scope["server"]``,
  the local end of the TCP connection): by default the loopback interface, which
  only processes on the SuperLink host itself can reach.

Every other request gets HTTP 403 with a one-line reason, before Flower sees it.
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

FLEET_PREFIX = "/v1/fleet/"  # SuperNodes: every path their HTTP client uses
OPEN_PATHS = frozenset({"/health"})
REFUSAL = (
    "this SuperLink accepts only SuperNodes (Fleet API) on this address; "
    "runs are submitted by the operator on the SuperLink host (or over an SSH tunnel to it)"
)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_fleet_path(path: str) -> bool:
    """Whether ``path`` is one a SuperNode calls (admitted on every address).

    Only a path in normal form counts (no ``..``, ``.`` or empty segments), so no
    spelling of a Control path can pass as a Fleet path.
    """
    if posixpath.normpath(path) != path:
        return False
    return path.startswith(FLEET_PREFIX) or path in OPEN_PATHS


class OperatorGate:
    """ASGI middleware: Control and Runtime API only on connections to ``control_hosts``.

    Args:
        app: the SuperLink's ASGI app.
        control_hosts: IP addresses on which Control/Runtime requests are admitted;
            a loopback address admits every loopback address (127.0.0.0/8, ::1).
    """

    def __init__(self, app: ASGIApp, control_hosts: Iterable[str]) -> None:
        self.app = app
        self.control = []
        for host in control_hosts:
            address = _address(host)
            if address is None or address.is_unspecified:
                raise ValueError(f"control host must be one IP address, not {host!r}")
            self.control.append(address)
        if not self.control:
            raise ValueError("give at least one control host")

    def admits(self, path: str, local_host: str | None) -> bool:
        """Whether a request for ``path`` over a connection to ``local_host`` is served."""
        if is_fleet_path(path):
            return True
        local = _address(local_host) if local_host else None
        if local is None:
            return False
        return any(local == allowed or (local.is_loopback and allowed.is_loopback) for allowed in self.control)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan: Flower's start-up and shut-down
            await self.app(scope, receive, send)
            return
        server = scope.get("server")
        if self.admits(scope.get("path", ""), server[0] if server else None):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"detail": REFUSAL}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": body})
