"""Sparse matrices from untrusted parts: the CSR triple is checked before SciPy sees it.

A CSR matrix with ``rows x cols`` entries is three arrays: ``indptr`` (``rows + 1``
offsets, starting at 0 and never decreasing), ``indices`` (the column of each stored
entry, in ``[0, cols)``) and ``data`` (one value per entry), with
``indptr[-1] == len(indices) == len(data)``. SciPy trusts much of this layout, so
parts read from a file (a Planetoid pickle, a graph ``.npz``) are checked here first
and a broken layout is a one-line :class:`ValueError` instead of a wrong matrix or
a crash deep inside SciPy.

Dense copies are bounded by :data:`MAX_DENSE_ENTRIES`, so a file that claims a huge
shape fails with a message instead of exhausting memory.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

MAX_DENSE_ENTRIES = 2**31  # 8 GiB as float32: far above PubMed's 19717 x 500

_NUMERIC_KINDS = "biuf"


def csr_from_parts(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: object) -> sp.csr_matrix:
    """A ``csr_matrix`` from checked parts.

    Raises:
        ValueError: one line naming what is inconsistent.
    """
    rows, cols = matrix_shape(shape)
    for part, array, kinds in (("data", data, _NUMERIC_KINDS), ("indices", indices, "iu"), ("indptr", indptr, "iu")):
        if not isinstance(array, np.ndarray) or array.ndim != 1 or array.dtype.kind not in kinds:
            raise ValueError(f"CSR {part} is not a 1-D {'numeric' if part == 'data' else 'integer'} array")
    if indptr.size != rows + 1:
        raise ValueError(f"CSR indptr has {indptr.size} entries but the matrix has {rows} rows (expected {rows + 1})")
    if indptr[0] != 0 or np.any(np.diff(indptr.astype(np.int64)) < 0):
        raise ValueError("CSR indptr does not start at 0 and rise")
    if indices.size != data.size:
        raise ValueError(f"CSR indices has {indices.size} entries but data has {data.size}")
    if int(indptr[-1]) != indices.size:
        raise ValueError(f"CSR indptr ends at {int(indptr[-1])} but there are {indices.size} stored entries")
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= cols):
        raise ValueError(f"CSR indices reach outside the {cols} columns")
    if data.dtype.kind == "f" and not np.all(np.isfinite(data)):
        raise ValueError("CSR data holds NaN or infinite values")
    return sp.csr_matrix((data, indices.astype(np.int64), indptr.astype(np.int64)), shape=(rows, cols))


def matrix_shape(shape: object) -> tuple[int, int]:
    """``(rows, cols)`` from a 2-tuple or 2-array of non-negative integers."""
    values = list(shape) if isinstance(shape, (tuple, list, np.ndarray)) else None
    if (
        values is None
        or len(values) != 2
        or not all(isinstance(value, (int, np.integer)) and not isinstance(value, bool) for value in values)
        or min(values) < 0
    ):
        raise ValueError(f"matrix shape {shape!r} is not two non-negative integers")
    return int(values[0]), int(values[1])


def check_dense_size(rows: int, cols: int) -> None:
    """Refuse a dense ``rows x cols`` matrix over :data:`MAX_DENSE_ENTRIES` entries."""
    if rows * cols > MAX_DENSE_ENTRIES:
        raise ValueError(f"a {rows} x {cols} matrix is too large to hold densely")
