"""Where a client's subgraph comes from: the graph (or an exported partition), unless a harness
opened a data source for its federation.

:func:`partition_data` is what the ClientApp reads. A harness that trains on altered
subgraphs (the privacy audit plants canaries into each client's graph) opens
:func:`data_source` for one federation spec while its in-process run lasts; every other
federation reads :func:`stamen.client.job.client_data` as always. Nothing is patched: the hook is
this module's, and it closes with the ``with`` block, on errors too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from torch_geometric.data import Data

from stamen.client.job import client_data
from stamen.graphs import FederationSpec
from stamen.graphs.node_data import PARTITION_FILE

_SOURCES: dict[FederationSpec, Callable[[int], Data]] = {}


@contextlib.contextmanager
def data_source(spec: FederationSpec, read: Callable[[int], Data]) -> Iterator[None]:
    """While open, a client of ``spec`` reads ``read(partition_id)`` as its subgraph."""
    if spec in _SOURCES:
        raise RuntimeError("a data source for this federation is already open")
    _SOURCES[spec] = read
    try:
        yield
    finally:
        del _SOURCES[spec]


def data_is_given(spec: FederationSpec) -> bool:
    """A client of ``spec`` does not cut the graph itself: a data source is open for it, or its data root holds
    an exported partition (a deployment's host)."""
    return spec in _SOURCES or bool(spec.data_root) and (Path(spec.data_root).expanduser() / PARTITION_FILE).is_file()


def partition_data(spec: FederationSpec, partition_id: int, device: torch.device) -> Data:
    """Client ``partition_id``'s subgraph on ``device``: an open data source's, else :func:`client_data`."""
    read = _SOURCES.get(spec)
    if read is not None:
        return read(partition_id).to(device)
    return client_data(spec, partition_id, device)
