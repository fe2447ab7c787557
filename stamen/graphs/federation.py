"""A federated graph: one dataset, cut into client subgraphs, each with its splits.

:class:`FederationSpec` names everything that defines the clients' data; the same
spec always gives the same clients. :func:`build_federation` is cached per process
and keyed by the spec, so a process that serves many clients (a simulation actor)
loads and partitions the graph once. A graph set (many small graphs, graph classification's)
is shared out graph by graph instead (:mod:`stamen.graphs.graph_federation`).
"""

from __future__ import annotations

import functools
import hashlib
import io
import zipfile
import zlib
from pathlib import Path

import numpy as np
from torch_geometric.data import Data

from stamen.common.file_writes import atomic_write
from stamen.graphs.datasets import cache_dir, load_dataset
from stamen.graphs.federation_data import Federation
from stamen.graphs.graph_federation import build_graph_federation
from stamen.graphs.names import is_graph_set
from stamen.graphs.partition import client_subgraphs, cut_edges, partition_nodes
from stamen.graphs.settings import with_settings
from stamen.graphs.spec import FederationSpec
from stamen.graphs.splits import split_masks


@functools.lru_cache(maxsize=4)
def build_federation(spec: FederationSpec) -> Federation:
    """Load, partition and split once per process for a given spec."""
    if is_graph_set(spec.dataset):
        return build_graph_federation(spec)
    graph = load_dataset(spec.dataset, spec.data_root or None, seed=spec.graph_seed, **dict(spec.dataset_options))
    num_parts = spec.num_clients + int(spec.new_client)
    parts = cached_partition(graph, num_parts, spec.partitioner, spec.seed, spec.dirichlet_alpha)
    subgraphs: list[Data | None] = list(client_subgraphs(graph, parts))  # one pass over the edges for every client
    clients = []
    for index in range(spec.num_clients):
        sub, subgraphs[index] = subgraphs[index], None  # freed once set: no second copy of every client at once
        clients.append(
            with_settings(
                sub,
                spec.train_frac,
                spec.val_frac,
                spec.unseen_node_frac,
                spec.missing_classes,
                seed=spec.seed * 100_003 + index,
            )
        )
        del sub
    new_client = None
    if spec.new_client:  # never trains: every node is an evaluation node
        new_client = subgraphs[spec.num_clients]
        new_client.train_mask, new_client.val_mask, new_client.test_mask = split_masks(
            new_client.num_nodes, spec.train_frac, spec.val_frac, seed=spec.seed * 100_003 + spec.num_clients
        )
    return Federation(
        spec=spec,
        graph=graph,
        parts=parts,
        clients=clients,
        new_client=new_client,
        cut_edges=cut_edges(graph, parts),
    )


def cached_partition(graph: Data, num_parts: int, method: str, seed: int, alpha: float) -> list[np.ndarray]:
    """:func:`partition_nodes`, kept on disk under ``$STAMEN_CACHE/partitions``.

    Every process of a run (the CLI that checks the config, each simulation actor,
    every SuperNode of a deployment on one host) needs the same partition, and Louvain
    on a 20,000-node graph takes half a minute. The file is named by a hash of the
    graph's edges and labels and of the partitioner's arguments, so a different graph
    or setting never reads another's parts. A cached file that is damaged or does not
    hold ``num_parts`` parts covering every node once is computed again and replaced.
    """
    digest = hashlib.sha256()
    for tensor in (graph.edge_index, graph.y):
        digest.update(np.ascontiguousarray(tensor.cpu().numpy()))  # its bytes, without a copy (1.3 GB at 10M)
    digest.update(repr((int(graph.num_nodes), num_parts, method, seed, alpha)).encode())
    path = cache_dir() / "partitions" / f"{digest.hexdigest()[:24]}.npz"
    if path.is_file():
        stored = _stored_partition(path, int(graph.num_nodes), num_parts)
        if stored is not None:
            return stored
    parts = partition_nodes(graph, num_parts, method, seed=seed, alpha=alpha)
    path.parent.mkdir(parents=True, exist_ok=True)
    packed = io.BytesIO()
    np.savez(packed, nodes=np.concatenate(parts), bounds=np.cumsum([part.size for part in parts])[:-1])
    atomic_write(path, packed.getvalue())  # a concurrent reader sees the whole file or none
    return parts


def _stored_partition(path: Path, num_nodes: int, num_parts: int) -> list[np.ndarray] | None:
    """The parts cached in ``path`` (read as plain arrays), or ``None`` if it is damaged or inconsistent."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            nodes, bounds = stored["nodes"], stored["bounds"]
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError, AttributeError, TypeError):
        return None  # AttributeError/TypeError: a single array, not an archive
    if (
        nodes.ndim != 1
        or bounds.ndim != 1
        or nodes.dtype.kind not in "iu"
        or bounds.dtype.kind not in "iu"
        or bounds.size != num_parts - 1
        or np.any(np.diff(bounds, prepend=0, append=nodes.size) < 0)
        or not np.array_equal(np.sort(nodes), np.arange(num_nodes))
    ):
        return None
    return np.split(nodes, bounds)
