"""A record's arrays travel as one array and come back the very same, in half the objects."""

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict
from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects

from stamen.contract.arrays import numpy_array
from stamen.contract.packed import PACKED, has_packed, is_packed, pack, packed_content, unpack, unpacked_content


def _weights() -> ArrayRecord:
    """A two-layer GCN's weights and biases, and the odd shapes: a scalar, an empty array, another dtype."""
    rng = np.random.default_rng(0)
    arrays = {
        "conv1.lin.weight": rng.normal(size=(16, 32)).astype(np.float32),
        "conv1.bias": rng.normal(size=16).astype(np.float32),
        "conv2.lin.weight": rng.normal(size=(7, 16)).astype(np.float32),
        "conv2.bias": rng.normal(size=7).astype(np.float32),
        "steps": np.array(12, dtype=np.int64),
        "empty": np.zeros((0, 3), dtype=np.float64),
    }
    return ArrayRecord({name: numpy_array(values) for name, values in arrays.items()})


def test_unpacking_gives_back_the_same_arrays_bytes_and_order():
    record = _weights()
    packed = pack(record)
    assert list(packed.keys()) == [PACKED] and is_packed(packed)
    back = unpack(packed)
    assert list(back.keys()) == list(record.keys())
    for name, array in record.items():
        got = back[name]
        assert (got.dtype, got.shape, got.stype, got.data) == (array.dtype, array.shape, array.stype, array.data)
    assert back.object_id == record.object_id  # Flower's content hash: nothing differs


def test_a_message_content_is_half_the_objects_packed():
    weights = ArrayRecord({k: v for k, v in _weights().items() if k.startswith("conv")})  # the GCN's four arrays
    content = RecordDict(
        {"arrays": weights, "config": ConfigRecord({"server-round": 3}), "m": MetricRecord({"a": 1.0})}
    )
    plain = len(get_all_nested_objects(content))
    packed = len(get_all_nested_objects(packed_content(content)))
    assert (plain, packed) == (12, 6)  # the RecordDict, three records; 4 arrays + 4 chunks -> 1 + 1
    back = unpacked_content(packed_content(content))
    assert back.object_id == content.object_id and not has_packed(back)


def test_what_has_nothing_to_gain_is_left_as_it_is():
    one = ArrayRecord({"w": numpy_array(np.ones(3, dtype=np.float32))})
    assert pack(one) is one and pack(ArrayRecord()) is not None
    content = RecordDict({"arrays": one, "config": ConfigRecord({"a": 1})})
    assert packed_content(content) is content and unpacked_content(content) is content
    packed = pack(_weights())
    assert pack(packed) is packed  # packed once only
    assert unpack(one) is one


def _packed_bytes(data: bytes) -> ArrayRecord:
    return ArrayRecord({PACKED: Array(dtype="uint8", shape=(len(data),), stype=PACKED, data=data)})


@pytest.mark.parametrize(
    ("cut", "reason"),
    [
        (lambda data: data[:-1], "header does not account for|entry"),  # the last array's bytes cut short
        (lambda data: data + b"\0", "header does not account for"),  # bytes no array claims
        (lambda data: data[:5], "cannot be read"),  # not even the header's length
        (lambda data: data[:8] + b"{not json" + data[17:], "cannot be read"),
    ],
)
def test_a_packed_record_that_does_not_hold_what_its_header_says_is_refused(cut, reason):
    data = pack(_weights())[PACKED].data
    with pytest.raises(ValueError, match=reason):
        unpack(_packed_bytes(cut(data)))
