"""Model weights into and out of Flower's ``ArrayRecord``: torch's side of :mod:`stamen.contract.arrays`.

- :func:`weights_record` packs a module's tensors (the bytes ``np.save`` writes, each header
  written once per dtype and shape);
- :func:`record_tensors` reads a record back into tensors (each distinct header parsed once;
  an array of objects is refused, as ``np.load`` refuses it);
- :func:`load_weights` loads a record into a module. The in-process engine hands the same
  record to every client of a round: it is decoded once per round, not once per client.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from flwr.app import ArrayRecord

from stamen.contract.arrays import array_values, numpy_array
from stamen.models.state import copy_state

_LOADED: list[tuple[ArrayRecord, list[bytes], dict[str, torch.Tensor]]] = []


def weights_record(tensors: Mapping[str, torch.Tensor]) -> ArrayRecord:
    """``ArrayRecord(tensors)`` with the bytes ``np.save`` writes, its header written once per dtype and shape."""
    record = ArrayRecord()
    for name, tensor in tensors.items():
        record[name] = numpy_array(tensor.detach().cpu().numpy())
    return record


def record_tensors(record: ArrayRecord) -> dict[str, torch.Tensor]:
    """``record.to_torch_state_dict()``: a tensor of its own per array, each distinct header parsed once."""
    return {name: torch.from_numpy(array_values(array)) for name, array in record.items()}


def load_weights(module: torch.nn.Module, record: ArrayRecord, strict: bool = True) -> None:
    """``module.load_state_dict`` from ``record``; the record last decoded is decoded once.

    The decoded tensors never leave this function (``load_state_dict`` copies them), so a
    record handed to several clients gives each the same weights.
    """
    datas = [array.data for array in record.values()]
    cached = _LOADED[0] if _LOADED else None
    if cached is not None and cached[0] is record and len(cached[1]) == len(datas):
        if all(a is b for a, b in zip(cached[1], datas)):
            _load(module, cached[2], strict)
            return
    tensors = record_tensors(record)
    _LOADED[:] = [(record, datas, tensors)]
    _load(module, tensors, strict)


def _load(module: torch.nn.Module, tensors: dict[str, torch.Tensor], strict: bool) -> None:
    if strict:
        copy_state(module, tensors)
    else:
        module.load_state_dict(tensors, strict=False)
