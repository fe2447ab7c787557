"""What a client must share with the head of its run: the same Stamen, and the same partition.

On one machine every client imports the code the ``stamen`` command staged and reads the
partition its pre-flight cached. On a Ray cluster (``stamen run --ray-address``) or in a
deployment, a client runs on another machine: from its own install of Stamen, with its own
data root, and cuts its own partition. A different checkout or a different copy of the data
would train a different federation while the run's figures claim this one. So the ServerApp
sends the head's identity (:func:`head_identity`) with every training message, under the
keys of :data:`IDENTITY_KEYS`, and each client compares it with its own before it trains
(:func:`identity_problem`; :mod:`stamen.client.identity` adds its data root and its partition's
digest). A client that differs fails with one line naming what differs; the server counts it
as a failed client and the run says it degraded.

The head's partition digest is computed by the command's pre-flight, which cuts the
partition anyway, and handed to the ServerApp in :data:`PARTITION_DIGEST_ENV` (the commit
travels the same way, :data:`stamen.contract.provenance.COMMIT_ENV`). A plain ``flwr run`` has no
digest: its clients check the version and commit only. Only the standard library.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from stamen.contract.provenance import code_version, stamen_version

PARTITION_DIGEST_ENV = "STAMEN_PARTITION_DIGEST"
# Keys inside a training message's CONFIG record (stamen.contract.protocol.CONFIG).
VERSION = "stamen-version"
COMMIT = "stamen-commit"
PARTITION_DIGEST = "partition-digest"
IDENTITY_KEYS = (VERSION, COMMIT, PARTITION_DIGEST)


def own_identity() -> dict[str, str]:
    """This process's Stamen: its version and commit (``""`` where unknown)."""
    return {VERSION: stamen_version() or "", COMMIT: code_version() or ""}


def head_identity() -> dict[str, str]:
    """What the ServerApp sends its clients: its own Stamen and the partition digest it was handed."""
    return {**own_identity(), PARTITION_DIGEST: os.environ.get(PARTITION_DIGEST_ENV, "")}


def identity_problem(head: Mapping[str, object], own: Mapping[str, str]) -> str | None:
    """What differs between the head's Stamen and this client's, in words; ``None`` when nothing does.

    A side that does not know its version or commit (a copy of the app outside git and not installed,
    handed neither) is not compared on it.
    """
    differs = []
    for key, what in ((VERSION, "version"), (COMMIT, "commit")):
        theirs, mine = str(head.get(key, "") or ""), own.get(key, "")
        if not (theirs and mine):
            continue
        if theirs != mine:
            differs.append(f"{what} {mine or 'unknown'} (the head runs {theirs or 'unknown'})")
    if not differs:
        return None
    return "this client runs another Stamen: " + ", ".join(differs) + "; install the head's checkout on every node"
