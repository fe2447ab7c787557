"""A client's check that it trains the head's federation, and the facts it reports about where it runs.

:func:`check_head` runs before a client reads its data for a training message: the head's
Stamen (version, commit) against its own (:func:`stamen.contract.identity.identity_problem`), its
data root (a folder on this machine), and, when the head sent a partition digest and this
client cuts the partition itself, the digest of its own cut
(:attr:`stamen.graphs.federation_data.Federation.digest`). Each difference is one line (a
:class:`HeadMismatch`); the handler fails with it, the server records the client as failed
and the run as degraded. The check is repeated for every message, at the cost of a few
string comparisons: the federation is built once per process anyway.

:func:`where` names the process that answered: its host (and Ray node, on a Ray worker) and
PID, with its peak resident memory, so the server counts the processes and nodes of a run and
their memory on every node, not only on the head's machine (``client_processes`` in a row).
"""

from __future__ import annotations

import functools
import socket
import sys
from collections.abc import Mapping
from pathlib import Path

from stamen.contract.identity import PARTITION_DIGEST, VERSION, identity_problem, own_identity
from stamen.graphs import FederationSpec, build_federation


class HeadMismatch(RuntimeError):
    """This client would not train the head's federation (the message says why, in one line)."""


def check_head(head: Mapping[str, object], spec: FederationSpec, exported: bool) -> None:
    """Raise :class:`HeadMismatch` unless this client runs the head's Stamen on the head's partition.

    ``head``: the training message's config record (the keys of :data:`stamen.contract.identity.IDENTITY_KEYS`;
    a message without them, e.g. from an older head, is not checked). ``exported``: this client reads an
    exported partition (a deployment's host) rather than cutting the graph, so there is no cut to compare.
    """
    problem = identity_problem(head, own_identity()) if VERSION in head else None
    if problem is None and spec.data_root and not Path(spec.data_root).expanduser().is_dir():
        problem = f"data-root {spec.data_root!r} is not a folder on this node; give every node the datasets there"
    digest = str(head.get(PARTITION_DIGEST, "") or "")
    if problem is None and digest and not exported:
        mine = build_federation(spec).digest
        if mine != digest:
            problem = (
                f"this client cut another partition (digest {mine}, the head's {digest}): its data or partitioner "
                "differ from the head's; give every node the same datasets and Stamen"
            )
    if problem is not None:
        raise HeadMismatch(f"{where_name()}: {problem}")


@functools.cache
def where_name() -> str:
    """This process's host, with its Ray node on a Ray worker (two nodes of one machine differ)."""
    host = socket.gethostname()
    ray = sys.modules.get("ray")  # a Ray worker has imported it; nothing else here imports Ray
    if ray is not None and ray.is_initialized():
        try:
            host += "/ray-" + ray.get_runtime_context().get_node_id()[:8]
        except Exception:  # a Ray without a runtime context: a driver being torn down
            pass
    return host


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (``getrusage``; 0 where it is not available)."""
    try:
        import resource  # optional: resource is Unix-only
    except ImportError:  # Windows
        return 0.0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KB on Linux
