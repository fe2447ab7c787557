"""The ClientApp unpacks what came packed, and answers packed only then."""

import numpy as np
import pytest
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MessageType, RecordDict

from stamen.client.packing import packed_records_mod
from stamen.contract.arrays import numpy_array
from stamen.contract.packed import has_packed, is_packed, packed_content
from stamen.simulations.inprocess import task_identity


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


def _content() -> RecordDict:
    arrays = ArrayRecord({f"w{i}": numpy_array(np.full(i + 2, i, dtype=np.float32)) for i in range(3)})
    return RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": 1})})


def _context() -> Context:
    return Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})


def _answer(seen: list[RecordDict]):
    def handler(message: Message, context: Context) -> Message:
        seen.append(message.content)
        return Message(RecordDict({"arrays": message.content["arrays"]}), reply_to=message)

    return handler


def test_a_packed_message_reaches_the_handler_unpacked_and_its_reply_goes_back_packed():
    original = _content()
    message = Message(content=packed_content(_content()), dst_node_id=1, message_type=MessageType.TRAIN)
    seen: list[RecordDict] = []
    reply = packed_records_mod(message, _context(), _answer(seen))
    assert not has_packed(seen[0]) and seen[0].object_id == original.object_id
    assert is_packed(reply.content["arrays"])


def test_a_message_that_did_not_come_packed_is_answered_as_the_handler_answers():
    message = Message(content=_content(), dst_node_id=1, message_type=MessageType.TRAIN)
    seen: list[RecordDict] = []
    reply = packed_records_mod(message, _context(), _answer(seen))
    assert seen[0] is message.content
    assert not has_packed(reply.content) and len(reply.content["arrays"]) == 3
