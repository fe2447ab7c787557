"""Flower arrays (``Array``) of numpy values, in the bytes ``np.save`` writes, at a fraction of Flower's cost.

Flower serialises each array with ``np.save`` and reads it with ``np.load``: both write or
parse the format's header (a Python dict literal) every time, a tenth of a millisecond per
array, several times per client and round, on the clients and on the server. The header
depends on the dtype and shape only:

- :func:`numpy_array` writes it once per (dtype, shape) and then copies the raw bytes behind
  it; the bytes are exactly ``np.save``'s, so every reader (Flower's strategies, any peer)
  reads them as before;
- :func:`array_values` parses each distinct header once and reads the values behind it
  (``allow_pickle`` stays off: an array of objects is refused, as ``np.load`` refuses it).

Both sides of a message use them: a client for its weights (:mod:`stamen.client.weights` adds the
tensors), the server to average the replies (:mod:`stamen.server.averaging`).
"""

from __future__ import annotations

import ast
import io
import math

import numpy as np
from flwr.app import Array

NUMPY = "numpy.ndarray"  # Flower's serialisation type of an np.save'd array
_MAGIC = b"\x93NUMPY"
_KEPT = 4096  # headers kept at most (shapes a run uses: a handful)

_HEADERS: dict[tuple[str, tuple[int, ...]], bytes] = {}
_LAYOUTS: dict[bytes, tuple[np.dtype, tuple[int, ...], bool, int]] = {}  # header -> dtype, shape, order, count


def numpy_array(values: np.ndarray) -> Array:
    """``Array(values)``: the bytes ``np.save`` writes, its header written once per dtype and shape."""
    key = (values.dtype.str, values.shape)
    header = _HEADERS.get(key) if values.flags.c_contiguous else None
    if header is None:
        buffer = io.BytesIO()
        np.save(buffer, values, allow_pickle=False)
        data = buffer.getvalue()
        if values.flags.c_contiguous:  # np.save writes others in Fortran order, or copies them
            if len(_HEADERS) >= _KEPT:
                _HEADERS.clear()
            _HEADERS[key] = data[: len(data) - values.nbytes]
    else:
        data = header + values.tobytes()
    return Array(dtype=str(values.dtype), shape=tuple(values.shape), stype=NUMPY, data=data)


def array_values(array: Array, writable: bool = True) -> np.ndarray:
    """``array.numpy()``: values of their own (writable, native byte order), each distinct header parsed once.

    ``writable=False`` may return a read-only view of the array's bytes instead (no copy), for a
    reader that only computes from the values.

    Raises:
        ValueError: the array holds Python objects (reading them could run code).
    """
    data = array.data
    if array.stype != NUMPY or not data.startswith(_MAGIC) or data[6:7] != b"\x01":
        return array.numpy()  # another serialisation or .npy version: Flower's reader
    offset = 10 + int.from_bytes(data[8:10], "little")
    header = data[:offset]
    layout = _LAYOUTS.get(header)
    if layout is None:
        if len(_LAYOUTS) >= _KEPT:
            _LAYOUTS.clear()
        fields = ast.literal_eval(header[10:].decode("latin1"))
        dtype = np.lib.format.descr_to_dtype(fields["descr"])
        if dtype.hasobject:
            raise ValueError("an array of Python objects in a weights record; refused (it could run code)")
        shape = tuple(fields["shape"])
        layout = _LAYOUTS[header] = (dtype, shape, bool(fields["fortran_order"]), math.prod(shape))
    dtype, shape, fortran, count = layout
    values = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    values = values.reshape(shape, order="F" if fortran else "C")
    if not writable and dtype.isnative:
        return values
    return np.array(values, dtype=dtype.newbyteorder("="), order="C")
