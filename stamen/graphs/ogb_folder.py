"""An OGB node-property dataset from its raw folder, read as CSV (no ``ogb`` package).

OGB's ``ogbn-*`` datasets unpack to ``<root>/ogbn_<name>/raw/`` with gzipped CSV files
without header:

- ``edge.csv.gz``: one edge ``source,target`` per line (node ids from 0);
- ``node-feat.csv.gz``: one line of ``d`` numbers per node; its line count is ``n``;
- ``node-label.csv.gz``: one class id per node (one column; several columns are a
  multi-label task such as ogbn-proteins, refused: Stamen trains single-label
  classification; ``nan`` marks an unlabelled node, also refused);
- ``num-node-list.csv.gz`` (optional): ``n``, checked against the features when present.

The ``split/`` folder is not read: Stamen splits each client's nodes itself. Numbers are
parsed by :func:`numpy.loadtxt`, so nothing in the files runs; a file that is not gzip,
not CSV of numbers, or disagrees with the others (node counts, ids in ``[0, n)``,
integral non-negative labels) is a one-line :class:`ValueError` naming it.
"""

from __future__ import annotations

import gzip
import warnings
import zlib
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

from stamen.graphs.csr import check_dense_size

NODE_COUNT = "num-node-list.csv.gz"


def read_ogb_folder(folder: Path, name: str) -> Data:
    """The graph in ``folder`` (an OGB ``raw/`` folder) as ``Data``.

    Raises:
        ValueError: a file is damaged, multi-label or inconsistent (one line naming it).
    """
    try:
        x = _csv(folder / "node-feat.csv.gz", np.float32)
        num_nodes = x.shape[0]
        if num_nodes == 0:
            raise ValueError("node-feat.csv.gz holds no nodes")
        check_dense_size(*x.shape)
        if not np.all(np.isfinite(x)):
            raise ValueError("node-feat.csv.gz holds NaN or infinite features")
        y = _labels(folder / "node-label.csv.gz", num_nodes)
        edges = _edges(folder / "edge.csv.gz", num_nodes)
        if (folder / NODE_COUNT).is_file():
            counted = _csv(folder / NODE_COUNT, np.int64)
            if counted.size != 1 or int(counted[0, 0]) != num_nodes:
                said = counted.ravel().tolist()
                raise ValueError(f"{NODE_COUNT} says {said} nodes, node-feat.csv.gz has {num_nodes}")
    except ValueError as error:
        raise ValueError(
            f"dataset {name!r}: could not read {folder}: {error}; replace the files with an intact copy"
        ) from error
    return Data(
        x=torch.from_numpy(x),
        edge_index=torch.from_numpy(edges),
        y=torch.from_numpy(y),
        num_classes=int(y.max()) + 1 if y.size else 0,
    )


def _csv(path: Path, dtype: type) -> np.ndarray:
    """The numbers of the gzipped CSV ``path`` as a 2-D array (ValueError naming the file)."""
    try:
        with gzip.open(path, "rt", encoding="ascii") as file, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # an empty file: numpy warns, we return 0 rows
            return np.loadtxt(file, delimiter=",", dtype=dtype, ndmin=2)
    except (OSError, EOFError, zlib.error, ValueError, UnicodeDecodeError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path.name}: {reason}") from error


def _labels(path: Path, num_nodes: int) -> np.ndarray:
    labels = _csv(path, np.float64)
    if labels.shape[0] != num_nodes:
        raise ValueError(f"{path.name} has {labels.shape[0]} rows but node-feat.csv.gz has {num_nodes}")
    if labels.shape[1] != 1:
        raise ValueError(
            f"{path.name} has {labels.shape[1]} label columns: a multi-label dataset; "
            "Stamen reads single-label datasets only (one class per node)"
        )
    labels = labels[:, 0]
    if not np.all(np.isfinite(labels)):
        raise ValueError(f"{path.name} leaves node {int(np.flatnonzero(~np.isfinite(labels))[0])} unlabelled (nan)")
    if np.any(labels < 0) or np.any(labels != np.round(labels)) or (labels.size and labels.max() >= 2**31):
        raise ValueError(f"{path.name} holds labels that are not non-negative class ids")
    return labels.astype(np.int64)


def _edges(path: Path, num_nodes: int) -> np.ndarray:
    edges = _csv(path, np.int64)
    if edges.size == 0:
        return np.zeros((2, 0), dtype=np.int64)
    if edges.shape[1] != 2:
        raise ValueError(f"{path.name} has {edges.shape[1]} columns, not source,target")
    if int(edges.min()) < 0 or int(edges.max()) >= num_nodes:
        raise ValueError(f"{path.name} names a node outside [0, {num_nodes})")
    return np.ascontiguousarray(edges.T)
