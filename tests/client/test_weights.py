"""Weights into and out of Flower's ArrayRecord: np.save's bytes, Flower's values, one decode per shared record."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from flwr.app import Array, ArrayRecord

from stamen.client.weights import load_weights, record_tensors, weights_record
from stamen.contract.arrays import NUMPY


def _state() -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return {
        "weight": torch.randn(5, 3, generator=generator),
        "bias": torch.randn(3, generator=generator),
        "count": torch.tensor(7),
        "steps": torch.arange(4, dtype=torch.int64),
        "half": torch.randn(2, 2, generator=generator).to(torch.float64),
    }


def test_the_bytes_are_flowers_own_every_time():
    state = _state()
    for _ in range(3):  # the first call writes each header, later ones reuse it
        ours, flowers = weights_record(state), ArrayRecord(state)
        assert list(ours) == list(flowers)
        for name in state:
            assert ours[name].data == flowers[name].data
            assert (ours[name].dtype, tuple(ours[name].shape), ours[name].stype) == (
                flowers[name].dtype,
                tuple(flowers[name].shape),
                flowers[name].stype,
            )
    state["weight"] = torch.randn(5, 3).t()  # not contiguous
    assert weights_record(state)["weight"].data == ArrayRecord(state)["weight"].data


def test_the_values_are_flowers_own():
    record = ArrayRecord(
        array_dict={
            "c": Array(np.arange(6, dtype=np.float32).reshape(2, 3)),
            "fortran": Array(np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))),
            "big-endian": Array(np.arange(4, dtype=">f4")),
            "scalar": Array(np.array(3, dtype=np.int64)),
        }
    )
    for _ in range(2):
        ours, flowers = record_tensors(record), {k: a.numpy() for k, a in record.items()}
        for name, values in flowers.items():
            assert ours[name].shape == values.shape and np.array_equal(ours[name].numpy(), values)
            assert ours[name].dtype == torch.from_numpy(values.astype(values.dtype.newbyteorder("="))).dtype


def test_an_array_of_objects_is_refused():
    header = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }".ljust(117) + "\n"
    data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1") + b"\x00" * 8
    record = ArrayRecord(array_dict={"x": Array(dtype="object", shape=(1,), stype=NUMPY, data=data)})
    with pytest.raises(ValueError, match="refused"):
        record_tensors(record)


def test_a_shared_record_gives_every_module_the_same_weights():
    source = torch.nn.Linear(4, 2)
    record = weights_record(source.state_dict())
    first, second = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)
    load_weights(first, record)
    with torch.no_grad():
        first.weight.add_(1.0)  # a client trains its copy in place
    load_weights(second, record)  # decoded once, copied into each module
    assert torch.equal(second.weight, source.weight) and torch.equal(second.bias, source.bias)
    with torch.no_grad():
        source.weight.mul_(2.0)
    load_weights(second, weights_record(source.state_dict()))  # a new record: decoded anew
    assert torch.equal(second.weight, source.weight)
    record["bias"] = weights_record({"bias": torch.zeros(2)})["bias"]  # an array replaced in place
    load_weights(second, record)
    assert torch.equal(second.bias, torch.zeros(2))


def test_a_read_only_view_holds_the_same_values():
    from stamen.contract.arrays import array_values

    for values in (np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(4, dtype=">f4")):
        array = Array(values)
        view = array_values(array, writable=False)
        assert np.array_equal(view, values) and view.shape == values.shape
        assert array_values(array).flags.writeable
