r"""A record's arrays as one array on the wire: fewer objects for Flower to move per message.

Flower 1.42 sends a message as a tree of objects, and every ``Array`` of an
``ArrayRecord`` is two of them (the array and its chunk of bytes). Between machines each
object is a request of its own on each leg (``push-object`` by the sender, ``pull-object``
by the receiver), and the SuperLink answers each with several queries of its link-state
database: a two-layer GCN's weights (four arrays) make 8 of a reply's 12 objects. Across
a deployment's SuperNodes that object traffic is most of the SuperLink's work in a round
(benchmarks/deploy-nodes.md).

:func:`packed_content` replaces each ``ArrayRecord`` of two or more arrays by a record of
one array named :data:`PACKED` whose bytes are

.. math::
    \underbrace{n}_{\text{8 bytes, little-endian}} \;\|\;
    \underbrace{\text{header}}_{n \text{ bytes of JSON}} \;\|\;
    \text{data}_1 \,\|\, \cdots \,\|\, \text{data}_k,

the header listing each array's name, ``dtype``, ``shape``, ``stype`` and byte count in
order; :func:`unpacked_content` rebuilds the record with the very same arrays (the same
bytes: no number changes). The header is JSON and the arrays stay Flower's, read as before
(``np.load`` without pickles): nothing read from a message runs code.

Who packs: the ServerApp's transport (:mod:`stamen.server.transport`) packs what it pushes and
unpacks the replies; the ClientApp's :func:`~stamen.client.packing.packed_records_mod` unpacks an
incoming message and packs the reply **only when the message came packed**, so a message
from anything else (Flower's SecAgg+ workflow, another ServerApp) gets a reply as Flower
would send it.
"""

from __future__ import annotations

import json
import struct

from flwr.app import Array, ArrayRecord, RecordDict

PACKED = "stamen.packed"  # the one array's name and its stype
_LENGTH = struct.Struct("<Q")


def is_packed(record: ArrayRecord) -> bool:
    """Whether ``record`` is :func:`pack`'s one array."""
    return len(record) == 1 and PACKED in record and record[PACKED].stype == PACKED


def pack(record: ArrayRecord) -> ArrayRecord:
    """``record``'s arrays as one array (a record of fewer than two arrays, or one already packed, as it is)."""
    if len(record) < 2 or is_packed(record):
        return record
    items = list(record.items())
    header = json.dumps(
        [[name, array.dtype, list(array.shape), array.stype, len(array.data)] for name, array in items],
        separators=(",", ":"),
    ).encode()
    data = b"".join([_LENGTH.pack(len(header)), header, *(array.data for _, array in items)])
    return ArrayRecord({PACKED: Array(dtype="uint8", shape=(len(data),), stype=PACKED, data=data)})


def unpack(record: ArrayRecord) -> ArrayRecord:
    """The record :func:`pack` was given (a record that is not packed, as it is).

    Raises:
        ValueError: the packed bytes do not hold what their header says.
    """
    if not is_packed(record):
        return record
    data = record[PACKED].data
    try:
        (length,) = _LENGTH.unpack_from(data, 0)
        entries = json.loads(data[_LENGTH.size : _LENGTH.size + length].decode())
        offset = _LENGTH.size + length
        arrays = {}
        for name, dtype, shape, stype, size in entries:
            if not (isinstance(name, str) and isinstance(size, int) and 0 <= size <= len(data) - offset):
                raise ValueError(f"entry {name!r} of {size!r} bytes")
            arrays[name] = Array(
                dtype=str(dtype),
                shape=tuple(int(n) for n in shape),
                stype=str(stype),
                data=data[offset : offset + size],
            )
            offset += size
    except (struct.error, UnicodeDecodeError, json.JSONDecodeError, TypeError, ValueError) as problem:
        raise ValueError(f"a packed array record that cannot be read ({problem})") from None
    if offset != len(data):
        raise ValueError(f"a packed array record with {len(data) - offset} bytes its header does not account for")
    return ArrayRecord(arrays)


def packed_content(content: RecordDict) -> RecordDict:
    """``content`` with each of its array records :func:`pack`\\ ed (the others as they are)."""
    if not any(isinstance(record, ArrayRecord) and len(record) >= 2 for record in content.values()):
        return content
    return RecordDict({key: pack(r) if isinstance(r, ArrayRecord) else r for key, r in content.items()})


def unpacked_content(content: RecordDict) -> RecordDict:
    """``content`` with each packed array record :func:`unpack`\\ ed (the others as they are)."""
    if not has_packed(content):
        return content
    return RecordDict({key: unpack(r) if isinstance(r, ArrayRecord) else r for key, r in content.items()})


def has_packed(content: RecordDict) -> bool:
    """Whether any array record of ``content`` is packed."""
    return any(isinstance(record, ArrayRecord) and is_packed(record) for record in content.values())
