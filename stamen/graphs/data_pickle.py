"""Planetoid's pickles read as data: arrays, CSR matrices and adjacency dicts, no code run.

The Planetoid raw files (``ind.<name>.x``, ``.y``, ``.graph``, ...) are Python 2
pickles of NumPy arrays, SciPy CSR matrices and a ``defaultdict(list)`` adjacency. A
plain ``pickle.load`` would call whatever a file names, so a crafted file runs code.
:class:`_DataUnpickler` resolves only the few names these files use, and none of them
to the real NumPy or SciPy callable: each resolves to an inert stand-in that records
its arguments and state.

- ``numpy.core.multiarray._reconstruct`` -> an empty :class:`_ArrayRecord`
  (``numpy.ndarray`` resolves to a marker that only this accepts as its class);
- ``numpy.dtype`` -> a :class:`_DtypeRecord` of the type code;
- ``scipy.sparse.csr.csr_matrix`` -> :class:`_CsrRecord`, whose state is its parts;
- ``collections.defaultdict`` -> a plain ``dict``; ``__builtin__.list`` -> ``list``.

Any other name fails. The records are then turned into NumPy values here, by rules
that accept only numeric type codes (``b1``, ``i1`` ... ``f8``) with a byte order, a
shape whose size matches the stored bytes, and CSR parts checked by
:func:`stamen.graphs.csr.csr_from_parts`. Files are decoded with ``encoding='latin1'``,
which maps a Python 2 ``str`` byte for byte, as NumPy's own reader expects.

Every failure is a one-line :class:`ValueError` describing the problem; the caller
names the file.
"""

from __future__ import annotations

import io
import math
import pickle
from pathlib import Path

import numpy as np

from stamen.graphs.csr import check_dense_size, csr_from_parts

_TYPE_CODES = frozenset({"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"})
_NDARRAY = object()  # what ``numpy.ndarray`` resolves to: not a class, so nothing can instantiate it


class _DtypeRecord:
    """``numpy.dtype(code, align, copy)`` as written; ``state`` holds the byte order."""

    def __init__(self, code: object) -> None:
        self.code = code
        self.state: object = None

    def __setstate__(self, state: object) -> None:
        self.state = state


class _ArrayRecord:
    """``ndarray.__reduce__``'s state: ``(version, shape, dtype, fortran, raw bytes)``."""

    def __init__(self) -> None:
        self.state: object = None

    def __setstate__(self, state: object) -> None:
        self.state = state


class _CsrRecord:
    """A pickled ``csr_matrix``: its ``__dict__`` (``data``, ``indices``, ``indptr``, ``_shape``)."""

    state: object = None

    def __setstate__(self, state: object) -> None:
        self.state = state


def _dtype(code: object, *flags: object) -> _DtypeRecord:
    return _DtypeRecord(code)


def _reconstruct(cls: object, *args: object) -> _ArrayRecord:
    if cls is not _NDARRAY:
        raise pickle.UnpicklingError("an array of a class other than numpy.ndarray")
    return _ArrayRecord()


def _plain_dict(*factory: object) -> dict:
    return {}


_NAMES: dict[tuple[str, str], object] = {
    ("numpy", "dtype"): _dtype,
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("scipy.sparse.csr", "csr_matrix"): _CsrRecord,
    ("scipy.sparse._csr", "csr_matrix"): _CsrRecord,
    ("collections", "defaultdict"): _plain_dict,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
}


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        try:
            return _NAMES[(module, name)]
        except (KeyError, TypeError):
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a data file never needs") from None

    def persistent_load(self, pid: object) -> object:
        raise pickle.UnpicklingError("it holds a persistent reference")


MAX_BYTES = 2**30  # a Planetoid raw file: PubMed's largest is tens of MB


def check_size(path: Path) -> None:
    """ValueError in one line when ``path`` is larger than any Planetoid raw file (it is never read whole)."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise ValueError(f"cannot read it ({error.strerror or error})") from error
    if size > MAX_BYTES:
        raise ValueError(f"it holds {size:,} bytes, more than a Planetoid raw file ({MAX_BYTES:,} at most)")


def _unpickle(path: Path) -> object:
    check_size(path)
    try:
        return _DataUnpickler(io.BytesIO(path.read_bytes()), encoding="latin1").load()
    except OSError as error:
        raise ValueError(f"cannot read it ({error.strerror or error})") from error
    except Exception as error:  # nothing foreign runs above: any failure is a malformed file
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"it is not a Planetoid data pickle ({reason})") from error


def _array(record: object, what: str) -> np.ndarray:
    if not isinstance(record, _ArrayRecord) or not isinstance(record.state, tuple):
        raise ValueError(f"its {what} is not a NumPy array")
    state = record.state[1:] if len(record.state) == 5 else record.state
    if len(state) != 4:
        raise ValueError(f"its {what} has an unknown array layout")
    shape, dtype_record, fortran, raw = state
    dtype = _numeric_dtype(dtype_record, what)
    if not isinstance(shape, tuple) or not all(type(size) is int and size >= 0 for size in shape):
        raise ValueError(f"its {what} has a malformed shape")
    if isinstance(raw, str):
        raw = raw.encode("latin1")
    if not isinstance(raw, bytes) or len(raw) != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"its {what} holds the wrong number of bytes for shape {shape}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()


def _numeric_dtype(record: object, what: str) -> np.dtype:
    if not isinstance(record, _DtypeRecord) or not isinstance(record.code, str) or record.code not in _TYPE_CODES:
        raise ValueError(f"its {what} is not of a plain numeric type")
    state = record.state
    plain = isinstance(state, tuple) and len(state) >= 5 and state[2:5] == (None,) * 3
    if not plain or state[1] not in ("<", ">", "|", "="):
        raise ValueError(f"its {what} has a structured or unknown type")
    dtype = np.dtype(str(record.code))
    return dtype.newbyteorder(state[1]) if state[1] in "<>" else dtype


def read_matrix(path: Path) -> np.ndarray:
    """The dense 2-D array pickled in ``path`` (a NumPy array or a SciPy CSR matrix)."""
    value = _unpickle(path)
    if isinstance(value, _ArrayRecord):
        matrix = _array(value, "array")
        if matrix.ndim != 2:
            raise ValueError(f"it holds a {matrix.ndim}-D array, not a matrix")
        return matrix
    if isinstance(value, _CsrRecord) and isinstance(value.state, dict):
        parts = value.state
        shape = parts.get("_shape", parts.get("shape"))
        arrays = [_array(parts.get(name), f"CSR {name}") for name in ("data", "indices", "indptr")]
        matrix = csr_from_parts(*arrays, shape)
        check_dense_size(*matrix.shape)
        return matrix.toarray()
    raise ValueError("it holds neither a NumPy array nor a CSR matrix")


def read_adjacency(path: Path) -> dict[int, list[int]]:
    """The ``{node: [neighbours]}`` dict pickled in ``path``; every key and neighbour an ``int``."""
    value = _unpickle(path)
    if not isinstance(value, dict):
        raise ValueError("it does not hold an adjacency dict")
    for node, neighbours in value.items():
        if not _is_int(node) or not isinstance(neighbours, list) or not all(map(_is_int, neighbours)):
            raise ValueError(f"its adjacency entry {node!r} is not an integer node with a list of integer neighbours")
    return value


def _is_int(item: object) -> bool:
    return type(item) is int  # exactly int: a bool or a stand-in record is refused
