"""Model weights into and out of Flower's ``ArrayRecord``: the same ``.npy`` bytes, a fraction of the cost.

Flower serialises each array with ``np.save`` and reads it with ``np.load``: both write or
parse the format's header (a Python dict literal) every time, a tenth of a millisecond per
array, several times per client and round. The header depends on the dtype and shape only:

- :func:`weights_record` writes it once per (dtype, shape) and then copies the raw bytes
  behind it; the bytes are exactly ``np.save``'s, so every reader (Flower's strategies, any
  peer) reads them as before;
- :func:`record_tensors` parses each distinct header once and reads the values behind it
  (``allow_pickle`` stays off: an object array is refused, as ``np.load`` refuses it);
- :func:`load_weights` loads a record into a module. The in-process engine hands the same
  record to every client of a round: it is decoded once per round, not once per client.
"""

from __future__ import annotations

import ast
import io
from collections.abc import Mapping

import numpy as np
import torch
from flwr.app import Array, ArrayRecord

NUMPY = "numpy.ndarray"  # Flower's serialisation type of an np.save'd array
_MAGIC = b"\x93NUMPY"
_KEPT = 4096  # headers kept at most (shapes a run uses: a handful)

_HEADERS: dict[tuple[str, tuple[int, ...]], bytes] = {}
_LAYOUTS: dict[bytes, tuple[np.dtype, tuple[int, ...], bool]] = {}
_LOADED: list[tuple[ArrayRecord, list[bytes], dict[str, torch.Tensor]]] = []


def weights_record(tensors: Mapping[str, torch.Tensor]) -> ArrayRecord:
    """``ArrayRecord(tensors)`` with the bytes ``np.save`` writes, its header written once per dtype and shape."""
    record = ArrayRecord()
    for name, tensor in tensors.items():
        array = tensor.detach().cpu().numpy()
        key = (array.dtype.str, array.shape)
        header = _HEADERS.get(key) if array.flags.c_contiguous else None
        if header is None:
            buffer = io.BytesIO()
            np.save(buffer, array, allow_pickle=False)
            data = buffer.getvalue()
            if array.flags.c_contiguous:  # np.save writes others in Fortran order, or copies them
                if len(_HEADERS) >= _KEPT:
                    _HEADERS.clear()
                _HEADERS[key] = data[: len(data) - array.nbytes]
        else:
            data = header + array.tobytes()
        record[name] = Array(dtype=str(array.dtype), shape=tuple(array.shape), stype=NUMPY, data=data)
    return record


def record_tensors(record: ArrayRecord) -> dict[str, torch.Tensor]:
    """``record.to_torch_state_dict()``: a tensor of its own per array, each distinct header parsed once."""
    return {name: torch.from_numpy(_values(array)) for name, array in record.items()}


def load_weights(module: torch.nn.Module, record: ArrayRecord, strict: bool = True) -> None:
    """``module.load_state_dict`` from ``record``; the record last decoded is decoded once.

    The decoded tensors never leave this function (``load_state_dict`` copies them), so a
    record handed to several clients gives each the same weights.
    """
    datas = [array.data for array in record.values()]
    cached = _LOADED[0] if _LOADED else None
    if cached is not None and cached[0] is record and len(cached[1]) == len(datas):
        if all(a is b for a, b in zip(cached[1], datas)):
            module.load_state_dict(cached[2], strict=strict)
            return
    tensors = record_tensors(record)
    _LOADED[:] = [(record, datas, tensors)]
    module.load_state_dict(tensors, strict=strict)


def _values(array: Array) -> np.ndarray:
    """The values of one ``np.save``'d array (Flower's ``Array.numpy`` otherwise)."""
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
        layout = _LAYOUTS[header] = (dtype, tuple(fields["shape"]), bool(fields["fortran_order"]))
    dtype, shape, fortran = layout
    count = int(np.prod(shape, dtype=np.int64))
    values = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    values = values.reshape(shape, order="F" if fortran else "C")
    return np.array(values, dtype=dtype.newbyteorder("="), order="C")  # its own, writable, native-order memory
