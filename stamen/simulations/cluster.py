"""The Flower simulation on an existing Ray cluster: ``--ray-address HOST:PORT``.

Flower 1.42's simulation has no option for a cluster: its Ray backend calls
``ray.init(**init_args)``, and Ray joins the cluster that the ``RAY_ADDRESS`` environment
variable names. The variable must reach the simulation process, which the SuperLink starts
(through SuperExec), so :func:`cluster_environment` is the SuperLink's environment as well as
``flwr run``'s (:func:`stamen.simulations.flower.flower_environment`, ``extra``). ``--ray-address``
defaults to a ``RAY_ADDRESS`` already set, so the documented ``RAY_ADDRESS=... stamen run``
goes through the same checks; without either, no ``RAY_ADDRESS`` reaches Flower and the
simulation starts a Ray instance of its own.

Pre-flight (:func:`check_ray_address`, :func:`check_cluster_federation`) refuses, in one line
and before anything starts, what cannot work on a cluster: an address that is not
``HOST:PORT`` or where nothing listens, and the federation's ``init-args-*`` keys (Ray refuses
``num_cpus``/``num_gpus`` when joining a cluster, after about 40 s and with an unclear
message; the cluster's ``ray start --num-cpus/--num-gpus`` decide its resources).

Each client on the cluster checks the head's Stamen and partition before it trains
(:mod:`stamen.contract.identity`); the head's partition digest travels to the ServerApp in
:data:`stamen.contract.identity.PARTITION_DIGEST_ENV`, set here too.
"""

from __future__ import annotations

import os
import re
import socket

from stamen.contract.identity import PARTITION_DIGEST_ENV

RAY_ADDRESS_ENV = "RAY_ADDRESS"
_ADDRESS = re.compile(r"(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9._-]+):(?P<port>\d{1,5})")
PROBE_SECONDS = 3.0


def ray_address(option: str | None) -> str:
    """The cluster a run joins: ``--ray-address``, else ``RAY_ADDRESS`` (``""``: none; Ray's ``local`` too)."""
    address = option if option is not None else os.environ.get(RAY_ADDRESS_ENV, "")
    return "" if address.strip() in ("", "local") else address.strip()


def check_ray_address(address: str, source: str = "--ray-address") -> str:
    """``address`` as ``HOST:PORT`` where something listens; ValueError in one line otherwise.

    Only a TCP connection is tried (a few seconds at most): whether it is a Ray head's GCS shows
    when the simulation joins it.
    """
    match = _ADDRESS.fullmatch(address)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise ValueError(
            f"{source} {address!r} is not HOST:PORT; give the Ray head's address, e.g. 10.0.0.1:6379 "
            "(the --port of its `ray start --head`)"
        )
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ValueError(
            f"{source} {address}: nothing answers there ({reason}); start the cluster's head with "
            f"`ray start --head --port {port}` or give its address"
        ) from None
    return f"{match['host']}:{port}"


def check_cluster_federation(federation: dict[str, object]) -> None:
    """Refuse the federation keys that cannot work on a cluster (one line naming why)."""
    init_args = sorted(key for key in federation if key.startswith("init-args-"))
    if init_args:
        raise ValueError(
            f"federation-config {', '.join(init_args)} cannot be used with --ray-address: Ray refuses to size a "
            "cluster it joins (each node's `ray start --num-cpus/--num-gpus` does); drop "
            f"{'it' if len(init_args) == 1 else 'them'} and size clients with client-resources-num-cpus/-num-gpus"
        )


def cluster_environment(address: str, partition_digest: str) -> dict[str, str]:
    """The variables a run adds to Flower's environment: the cluster to join (if any), the head's partition."""
    env = {PARTITION_DIGEST_ENV: partition_digest} if partition_digest else {}
    if address:
        env[RAY_ADDRESS_ENV] = address
    return env
