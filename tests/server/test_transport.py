"""server/transport.py: a simulation's in-memory grid gets at most SIMULATION_IN_FLIGHT messages at a time, every
message is still answered once, and any other grid gets every message at once."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from flwr.app import ConfigRecord, Message, RecordDict

from server import transport
from simulations.inprocess import task_identity


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
