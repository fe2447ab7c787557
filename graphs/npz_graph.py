"""A graph in the sparse-matrix ``.npz`` layout of the graph-robustness literature, checked.

The archive (e.g. Cora-ML) holds two CSR matrices by their parts,
``adj_matrix.{data,indices,indptr,shape}`` (``n x n`` adjacency) and
``attr_matrix.{...}`` (``n x d`` features), and ``labels`` (``n`` class ids, from 0).
Other members (names, metadata) are never read, so their object arrays need no
unpickling: the archive is opened with ``allow_pickle=False``.

The node list is the adjacency's rows; the edges are its stored entries (the
loader above makes them undirected). Before anything is built the archive must be
whole and consistent, or a one-line :class:`ValueError` names the file and the
problem: it opens as a zip whose members pass their CRC and decompress (a truncated
or damaged file fails here), the required members are present, each CSR triple is
consistent (:func:`graphs.csr.csr_from_parts`), the adjacency is square with as many
rows as the features, and ``labels`` is one non-negative integer per node.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from graphs.csr import check_dense_size, csr_from_parts

MATRICES = ("adj_matrix", "attr_matrix")
REQUIRED = (*(f"{m}.{part}" for m in MATRICES for part in ("data", "indices", "indptr", "shape")), "labels")

# What numpy/zipfile raise on a damaged archive: bad header, bad CRC, cut-off or corrupt deflate stream.
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError)


def read_npz_graph(path: Path, name: str) -> Data:
    """The graph stored in ``path`` as ``Data`` with ``x``, ``edge_index``, ``y`` and ``num_classes``.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the archive is damaged, incomplete or inconsistent (one line).
    """
    if not path.is_file():
        raise FileNotFoundError(f"dataset {name!r}: file {path} not found")
    try:
        arrays = _read_members(path)
        adjacency, attributes = (_matrix(arrays, prefix) for prefix in MATRICES)
        labels = _check_graph(adjacency.shape, attributes.shape, arrays["labels"])
    except ValueError as error:
        raise ValueError(
            f"dataset {name!r}: {path} is not a readable graph .npz ({error}); replace it with an intact copy"
        ) from error
    coo = adjacency.tocoo()
    return Data(
        x=torch.from_numpy(attributes.toarray()).float(),
        edge_index=torch.from_numpy(np.stack([coo.row, coo.col]).astype(np.int64)),
        y=torch.from_numpy(labels),
        num_classes=int(labels.max()) + 1 if labels.size else 0,
    )


def _read_members(path: Path) -> dict[str, np.ndarray]:
    try:
        archive = np.load(path, allow_pickle=False)
    except _DAMAGED as error:
        raise ValueError(f"it does not open as an .npz archive: {_one_line(error)}") from error
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError("it is a single array, not an .npz archive")
    with archive:
        missing = [member for member in REQUIRED if member not in archive.files]
        if missing:
            raise ValueError(f"missing arrays {', '.join(missing)}")
        try:
            return {member: archive[member] for member in REQUIRED}
        except _DAMAGED as error:
            raise ValueError(f"a member is damaged: {_one_line(error)}") from error


def _matrix(arrays: dict[str, np.ndarray], prefix: str) -> sp.csr_matrix:
    try:
        return csr_from_parts(*(arrays[f"{prefix}.{part}"] for part in ("data", "indices", "indptr", "shape")))
    except ValueError as error:
        raise ValueError(f"{prefix}: {error}") from error


def _check_graph(adjacency: tuple[int, int], attributes: tuple[int, int], labels: np.ndarray) -> np.ndarray:
    if adjacency[0] != adjacency[1]:
        raise ValueError(f"adj_matrix is {adjacency[0]} x {adjacency[1]}, not square")
    if attributes[0] != adjacency[0]:
        raise ValueError(f"attr_matrix has {attributes[0]} rows but adj_matrix has {adjacency[0]} nodes")
    check_dense_size(*attributes)
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
