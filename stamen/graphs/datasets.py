"""Dataset loaders: every graph enters Stamen here as a ``torch_geometric.data.Data``.

A loaded graph has ``x`` (float32, n x d), ``edge_index`` (2 x E, undirected: both
directions present, no self-loops, no duplicates), ``y`` (long, n), ``num_classes``
and ``name``.

Files are read from a *data root* (argument ``root``, else the environment variable
``STAMEN_DATA``) and never written: a root may be read-only (a shared folder, CI).
Nothing is ever downloaded; which files a dataset needs and where, and its reader, is its spec
(:class:`stamen.graphs.names.DatasetSpec`; Stamen's own: :mod:`stamen.graphs.forms`), and missing ones are
named in one line. Files are read as data,
never unpickled with code: Planetoid's raw pickles by :mod:`stamen.graphs.planetoid`, graph
archives by :mod:`stamen.graphs.npz_graph`, Wiki-CS's JSON by :mod:`stamen.graphs.wikics`, OGB's CSV
by :mod:`stamen.graphs.ogb_folder`; a damaged, foreign or inconsistent file is a one-line
``ValueError`` naming it. PyG's processed ``.pt`` files (torch pickles) are never
opened. Stamen's own derived files (partitions) go to a writable cache under
``STAMEN_CACHE`` (default ``~/.cache/stamen``).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

from stamen.graphs.names import dataset_problem, dataset_spec, resolve


def data_root(root: str | os.PathLike | None) -> Path | None:
    """The data root to read from: ``root`` if given, else ``$STAMEN_DATA``, else none."""
    chosen = root if root not in (None, "") else os.environ.get("STAMEN_DATA")
    return Path(chosen).expanduser().resolve() if chosen else None


def cache_dir() -> Path:
    """A writable folder for Stamen's derived files (``$STAMEN_CACHE`` or ``~/.cache/stamen``)."""
    path = Path(os.environ.get("STAMEN_CACHE", Path.home() / ".cache" / "stamen"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_dataset(
    name: str,
    root: str | os.PathLike | None = None,
    seed: int = 0,
    **options: float | int,
) -> Data:
    """Load a graph by name.

    Args:
        name: a dataset of one graph: a fixed name (:data:`stamen.graphs.names.DATASETS`) or a form
            (``npz:STEM``, ``pyg:CLASS/NAME``, ``ogb:ogbn-NAME``; :mod:`stamen.graphs.names`), read by its spec's
            reader.
        root: data root holding the raw files (ignored by a dataset generated from the seed, ``csbm``).
        seed: seed of generated datasets (``csbm``); file datasets ignore it.
        **options: generator options of ``csbm`` (see :func:`stamen.graphs.csbm.make_csbm`).

    Raises:
        ValueError: unknown dataset name, bad generator option, or a file that is damaged,
            foreign or inconsistent (one line naming it).
        FileNotFoundError: no data root, or files missing under it (one line naming them and where).
    """
    problem = dataset_problem(name)
    if problem:
        raise ValueError(problem)
    spec = dataset_spec(name)
    assert spec is not None  # a name without a problem has a spec
    if spec.graph_set:
        raise ValueError(
            f"dataset {name!r} is a set of small graphs, read by task='graph-classification' only; "
            "give a single-graph dataset such as csbm or cora"
        )
    folder = None
    if spec.files:  # a dataset read from files: none generated from the seed
        folder = data_root(root)
        if folder is None:
            raise FileNotFoundError(
                f"dataset {name!r} needs a data root: set the run-config key data-root "
                "(stamen run -c \"data-root='/data'\"), the option --data-root of stamen certify, partition, audit "
                "and bench, or the environment variable STAMEN_DATA"
            )
        if options:
            raise ValueError(f"dataset {name!r} takes no generator options (got {sorted(options)})")
    data = _canonical(resolve(spec.reader)(name, folder, seed, **options))
    data.name = name
    return data


def _canonical(data: Data) -> Data:
    """Undirected, coalesced, self-loop-free edges; float32 features; plain int ``num_classes``."""
    return Data(
        x=data.x.float(),
        edge_index=canonical_edges(data.edge_index, int(data.num_nodes)),
        y=data.y.long(),
        num_classes=int(data.num_classes),
    )


def canonical_edges(edge_index: Tensor, num_nodes: int) -> Tensor:
    """Both directions of every edge, sorted by (source, target), once each, no self-loops.

    PyG's ``remove_self_loops``, ``to_undirected`` and ``coalesce`` give these edges in
    three passes with two sorts; one sort of the int64 keys ``source * n + target``
    gives the same tensor (ten times faster on a million nodes). Ids outside
    ``0..n-1`` (whose keys would collide) take PyG's path unchanged.
    """
    edge_index = edge_index.long()
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        edge_index, _ = remove_self_loops(edge_index)
        return coalesce(to_undirected(edge_index, num_nodes=num_nodes), num_nodes=num_nodes)
    if _already_canonical(edge_index, num_nodes):
        return edge_index  # what the sort below would give again, bit for bit (a generated csbm's edges)
    src, dst = edge_index.numpy()
    apart = src != dst
    keys = np.concatenate([src[apart] * num_nodes + dst[apart], dst[apart] * num_nodes + src[apart]])
    keys.sort()
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    keys = keys[first]
    return torch.from_numpy(np.stack([keys // num_nodes, keys % num_nodes]))


def _already_canonical(edge_index: Tensor, num_nodes: int, chunk: int = 1 << 22) -> bool:
    """Whether ``edge_index`` (ids in ``0..n-1``) is already :func:`canonical_edges`'s answer: keys
    ``source * n + target`` strictly rising (sorted, no repeats), no self-loop, and every edge's reverse
    present. Checked a chunk at a time; the reverse test sorts one array of reversed keys, so a ten-million
    node graph needs one key array (8 bytes an edge) instead of the canonicalisation's five."""
    src, dst = edge_index.numpy()
    if src.size == 0:
        return True
    for start in range(0, src.size, chunk):
        rows = slice(start, min(start + chunk + 1, src.size))  # one key of overlap with the next chunk
        keys = src[rows] * num_nodes + dst[rows]
        if np.any(src[rows] == dst[rows]) or np.any(keys[1:] <= keys[:-1]):
            return False
    reverse = np.empty(src.size, dtype=np.int64)
    for start in range(0, src.size, chunk):
        rows = slice(start, start + chunk)
        np.multiply(dst[rows], num_nodes, out=reverse[rows])
        reverse[rows] += src[rows]
    reverse.sort()
    for start in range(0, src.size, chunk):
        rows = slice(start, start + chunk)
        if not np.array_equal(reverse[rows], src[rows] * num_nodes + dst[rows]):
            return False
    return True
