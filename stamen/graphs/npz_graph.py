"""A graph in a sparse-matrix ``.npz`` layout, checked; both key conventions of the literature.

The archive holds the ``n x n`` adjacency and the ``n x d`` features, each a CSR
matrix stored by its four parts, and ``labels`` (``n`` class ids, from 0). Two
conventions name the parts:

- dotted, the graph-robustness literature's (Cora-ML): ``adj_matrix.{data,indices,indptr,shape}``,
  ``attr_matrix.{data,indices,indptr,shape}``;
- underscored, the GNN-benchmark collection's (Shchur et al. 2018: Amazon, Coauthor; also
  graph2gauss's CitationFull files): ``adj_{data,indices,indptr,shape}``, ``attr_{data,...}``.

In either, the features may instead be one dense 2-D array ``attr_matrix``, and the
labels a CSR matrix (``labels_{data,...}`` or ``labels.{data,...}``) with one entry per
row (a node in several classes is refused: Stamen trains single-label classification).
Other members (names, metadata, pickled index maps) are never read, so their object
arrays need no unpickling: the archive is opened with ``allow_pickle=False``, and a
member Stamen does read that holds objects is refused without running anything.

The node list is the adjacency's rows; the edges are its stored entries (the loader
above makes them undirected). Before anything is built the archive must be whole and
consistent, or a one-line :class:`ValueError` names the file and the problem: it opens
as a zip whose members pass their CRC and decompress (a truncated or damaged file
fails here), the required members are present, each CSR triple is consistent
(:func:`stamen.graphs.csr.csr_from_parts`), the adjacency is square with as many rows as the
features, and the labels give one non-negative integer per node.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from stamen.graphs.csr import check_dense_size, csr_from_parts
from stamen.graphs.sources import Source

MATRICES = ("adj_matrix", "attr_matrix")
PARTS = ("data", "indices", "indptr", "shape")
REQUIRED = (*(f"{m}.{part}" for m in MATRICES for part in PARTS), "labels")  # the dotted convention
DENSE_FEATURES = "attr_matrix"
# (adjacency, features, labels) prefixes of the CSR parts, per convention
CONVENTIONS = {"dotted": ("adj_matrix.", "attr_matrix.", "labels."), "underscored": ("adj_", "attr_", "labels_")}

# What numpy/zipfile raise on a damaged archive: bad header, bad CRC, cut-off or corrupt deflate stream.
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError)


def read_npz_graph(path: Path, name: str, binary_features: bool = False) -> Data:
    """The graph stored in ``path`` as ``Data`` with ``x``, ``edge_index``, ``y`` and ``num_classes``.

    ``binary_features`` sets every positive feature to 1 (as PyG's npz datasets do).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the archive is damaged, incomplete or inconsistent (one line).
    """
    if not path.is_file():
        raise FileNotFoundError(f"dataset {name!r}: file {path} not found")
    try:
        adjacency, features, labels = _read_graph(path)
    except ValueError as error:
        raise ValueError(
            f"dataset {name!r}: {path} is not a readable graph .npz ({error}); replace it with an intact copy"
        ) from error
    coo = adjacency.tocoo()
    x = torch.from_numpy(np.asarray(features, dtype=np.float32))
    return Data(
        x=(x > 0).float() if binary_features else x,
        edge_index=torch.from_numpy(np.stack([coo.row, coo.col]).astype(np.int64)),
        y=torch.from_numpy(labels),
        num_classes=int(labels.max()) + 1 if labels.size else 0,
    )


def _read_graph(path: Path) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    try:
        archive = np.load(path, allow_pickle=False)
    except _DAMAGED as error:
        raise ValueError(f"it does not open as an .npz archive: {_one_line(error)}") from error
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError("it is a single array, not an .npz archive")
    with archive:
        adj, attr, lab = _convention(set(archive.files))
        files = set(archive.files)
        adjacency = _matrix(archive, adj)
        if all(f"{attr}{part}" in files for part in PARTS):
            features_csr = _matrix(archive, attr)
            check_dense_size(*features_csr.shape)
            features = features_csr.toarray()
        elif DENSE_FEATURES in files:
            features = _dense_features(_member(archive, DENSE_FEATURES))
        else:
            raise ValueError(f"missing arrays {', '.join(f'{attr}{part}' for part in PARTS)} (or {DENSE_FEATURES})")
        if "labels" in files:
            labels = _member(archive, "labels")
        elif all(f"{lab}{part}" in files for part in PARTS):
            labels = _single_labels(_matrix(archive, lab))
        else:
            raise ValueError("missing arrays labels")
    return adjacency, features, _check_graph(adjacency.shape, features.shape, labels)


def _convention(files: set[str]) -> tuple[str, str, str]:
    """The prefixes of the convention whose adjacency parts the archive has (a missing part is named)."""
    for adj, attr, lab in CONVENTIONS.values():
        if any(f"{adj}{part}" in files for part in PARTS):
            missing = [f"{adj}{part}" for part in PARTS if f"{adj}{part}" not in files]
            if missing:
                raise ValueError(f"missing arrays {', '.join(missing)}")
            return adj, attr, lab
    raise ValueError("missing arrays adj_matrix.{data,indices,indptr,shape} (or adj_{data,indices,indptr,shape})")


def _member(archive: np.lib.npyio.NpzFile, member: str) -> np.ndarray:
    try:
        return archive[member]
    except _DAMAGED as error:  # numpy refuses an object (pickled) member with a ValueError: nothing runs
        raise ValueError(f"a member is damaged or not plain data ({member}: {_one_line(error)})") from error


def _matrix(archive: np.lib.npyio.NpzFile, prefix: str) -> sp.csr_matrix:
    parts = [_member(archive, f"{prefix}{part}") for part in PARTS]
    try:
        return csr_from_parts(*parts)
    except ValueError as error:
        raise ValueError(f"{prefix.rstrip('._')}: {error}") from error


def _dense_features(array: np.ndarray) -> np.ndarray:
    if array.ndim != 2 or array.dtype.kind not in "biuf":
        raise ValueError(f"{DENSE_FEATURES} is not a 2-D numeric array (dtype {array.dtype}, shape {array.shape})")
    check_dense_size(*array.shape)
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        raise ValueError(f"{DENSE_FEATURES} holds NaN or infinite values")
    return array


def _single_labels(matrix: sp.csr_matrix) -> np.ndarray:
    """Class ids from a label matrix with one stored entry per row."""
    per_row = np.diff(matrix.indptr)
    if np.any(per_row != 1):
        row = int(np.flatnonzero(per_row != 1)[0])
        raise ValueError(
            f"the label matrix gives node {row} {int(per_row[row])} classes; "
            "Stamen reads single-label datasets only (one class per node)"
        )
    return matrix.indices.astype(np.int64)


def _check_graph(adjacency: tuple[int, int], attributes: tuple[int, ...], labels: np.ndarray) -> np.ndarray:
    if adjacency[0] != adjacency[1]:
        raise ValueError(f"adj_matrix is {adjacency[0]} x {adjacency[1]}, not square")
    if attributes[0] != adjacency[0]:
        raise ValueError(f"attr_matrix has {attributes[0]} rows but adj_matrix has {adjacency[0]} nodes")
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError(f"labels is not a 1-D integer array (dtype {labels.dtype}, shape {labels.shape})")
    if labels.size != adjacency[0]:
        raise ValueError(f"labels has {labels.size} entries but the graph has {adjacency[0]} nodes")
    if labels.size and int(labels.min()) < 0:
        raise ValueError("labels holds negative class ids")
    return labels.astype(np.int64)


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def read_npz_file(name: str, folder: Path, file: str, binary_features: bool = False) -> Data:
    """Graph ``file`` of ``folder``, read as dataset ``name`` (its features made 0/1 if ``binary_features``)."""
    where = Source(name, folder, (file,))
    where.require()
    return read_npz_graph(where.paths[0], name, binary_features=binary_features)
