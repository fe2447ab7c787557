"""stamen/server/transport.py: a simulation's in-memory grid gets at most SIMULATION_IN_FLIGHT messages at a time, every
message is still answered once, and any other grid gets every message at once."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, RecordDict

from stamen.contract.arrays import numpy_array
from stamen.contract.packed import PACKED, has_packed, is_packed
from stamen.server import transport
from stamen.simulations.inprocess import task_identity


@pytest.fixture(autouse=True)
def _flower_task() -> Iterator[None]:
    with task_identity():  # Flower stamps a message with its task's run id
        yield


class _Grid:
    """Answers a pushed message at its first pull, one pull late, recording how many were out at once."""

    def __init__(self) -> None:
        self.out: dict[str, Message] = {}
        self.most_out = 0
        self.pushed: list[int] = []
        self._ids = itertools.count()

    def push_messages(self, messages: list[Message]) -> list[str]:
        ids = []
        for message in messages:
            message.metadata.__dict__["_message_id"] = f"m{next(self._ids)}"
            self.out[message.metadata.message_id] = message
            ids.append(message.metadata.message_id)
            self.pushed.append(int(message.content["config"]["n"]))
        self.most_out = max(self.most_out, len(self.out))
        return ids

    def pull_messages(self, ids: set[str]) -> list[Message]:
        answered = [self.out.pop(i) for i in sorted(ids & self.out.keys())[:50]]  # a few at a time
        return [Message(RecordDict({"config": m.content["config"]}), reply_to=m) for m in answered]


class InMemoryGrid(_Grid):
    """Named as the grid of Flower's simulation process."""


def _messages(count: int) -> list[Message]:
    return [
        Message(RecordDict({"config": ConfigRecord({"n": n})}), dst_node_id=n + 1, message_type="train")
        for n in range(count)
    ]


def test_a_simulation_grid_gets_a_window_and_every_message_is_answered_once() -> None:
    count = transport.SIMULATION_IN_FLIGHT * 2 + 37
    grid = InMemoryGrid()
    replies = transport.send_and_receive(grid, _messages(count), timeout=None)
    assert grid.most_out == transport.SIMULATION_IN_FLIGHT
    assert grid.pushed == list(range(count))  # each once, in order
    assert sorted(int(r.content["config"]["n"]) for r in replies) == list(range(count))


def test_another_grid_gets_every_message_at_once() -> None:
    count = transport.SIMULATION_IN_FLIGHT * 2 + 37
    grid = _Grid()
    replies = transport.send_and_receive(grid, _messages(count), timeout=None)
    assert grid.most_out == count
    assert len(replies) == count


class _EchoGrid(_Grid):
    """Replies with the message's own content, as a ClientApp packing its answer would (stamen/contract/packed.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[RecordDict] = []

    def push_messages(self, messages: list[Message]) -> list[str]:
        self.sent += [message.content for message in messages]
        return super().push_messages(messages)

    def pull_messages(self, ids: set[str]) -> list[Message]:
        answered = [self.out.pop(i) for i in sorted(ids & self.out.keys())]
        return [Message(m.content, reply_to=m) for m in answered]


def test_array_records_go_packed_once_per_shared_content_and_replies_come_back_unpacked() -> None:
    weights = ArrayRecord({f"w{i}": numpy_array(np.full(i + 1, i, dtype=np.float32)) for i in range(4)})
    shared = RecordDict({"arrays": weights, "config": ConfigRecord({"n": 0})})  # a round's global weights
    expected = shared.object_id
    messages = [Message(shared, dst_node_id=n + 1, message_type="train") for n in range(3)]
    grid = _EchoGrid()
    replies = transport.send_and_receive(grid, messages, timeout=None)
    assert all(is_packed(content["arrays"]) for content in grid.sent)
    assert grid.sent[0] is grid.sent[1] is grid.sent[2]  # packed once for the three messages
    assert len(replies) == 3 and all(not has_packed(r.content) for r in replies)
    assert {r.content.object_id for r in replies} == {expected}  # the very same records back


def test_a_reply_that_cannot_be_unpacked_is_left_as_it_came() -> None:
    broken = ArrayRecord({PACKED: Array(dtype="uint8", shape=(3,), stype=PACKED, data=b"bad")})
    grid = _EchoGrid()
    (reply,) = transport.send_and_receive(
        grid,
        [
            Message(
                RecordDict({"arrays": broken, "config": ConfigRecord({"n": 0})}), dst_node_id=1, message_type="train"
            )
        ],
        timeout=None,
    )
    assert reply.content["arrays"][PACKED].data == b"bad"  # for the round's reply checks to refuse
