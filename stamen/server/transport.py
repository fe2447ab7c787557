"""Sending messages and waiting for the replies, without Flower's three-second naps.

Flower 1.42's ``Grid.send_and_receive`` pushes the messages, then pulls the replies
every 3 s (``HttpGrid``, the grid of a ServerApp process in a simulation and in a
deployment), so a round lasts a whole multiple of 3 s however fast the clients are.
:func:`send_and_receive` does the same through the public ``push_messages`` /
``pull_messages`` API, polling from a few milliseconds up to 0.1 s between pulls: a
short round ends within a few milliseconds of its last reply, a long one costs at most
one pull per 0.1 s. A grid without that API (the in-process grid, which answers at
once) is asked as it is.

In a Flower simulation (the in-memory grid of ``flwr run``'s simulation process) at most
:data:`SIMULATION_IN_FLIGHT` messages are out at a time; the next go as replies come in.
Each pull asks Flower's link state about every message out (each checked: the clock, the
run, the nodes), under the state's lock and the GIL that the simulation's threads feeding
the Ray actors share, so its cost grows with the messages out; and Flower's own state, left
as it is, checks every message it holds for each node it feeds, every 0.1 s (``n * m`` checks
a tick; Stamen's local simulations index them by node,
``stamen/simulations/flower_internals/link_state.py``). At 1,000 clients a window of 128 kept the
engine's overhead lowest (4.7 s a round, against 6.6 s with all 1,000 out and 4.9 s with 32:
benchmarks/scale-1000-clients.md); two local actors answer a window's messages in a fraction
of a second, longer than the tick, so they stay busy. Below the window (the usual 3-100 clients) nothing changes. A
deployment's nodes are machines of their own that train in parallel and pull their own
messages: every message goes at once there.
Replies are taken in partition order afterwards (:func:`stamen.server.loop.collect`), so the
window changes no figure, only when each message leaves.

On such a grid each array record of two or more arrays travels as one array
(:mod:`stamen.contract.packed`): a message is then half as many objects for Flower to push and
pull one by one, and the ClientApp (:mod:`stamen.client.packing`) answers in kind; replies are
unpacked here, so everything after this function reads the records as they were built.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from logging import WARNING

from flwr.app import Message, RecordDict
from flwr.common import log

from stamen.contract.packed import packed_content, unpacked_content

FIRST_WAIT = 0.002  # seconds before the first pull
LONGEST_WAIT = 0.1  # seconds between pulls, at most
GROWTH = 1.5
SIMULATION_IN_FLIGHT = 128  # messages out at a time on a simulation's in-memory grid
SIMULATION_GRID = "InMemoryGrid"  # the class of the grid ``flwr run``'s simulation process hands the ServerApp


def in_flight_limit(grid: object, count: int) -> int:
    """How many of ``count`` messages may be out at a time on ``grid`` (see the module docstring)."""
    simulated = any(cls.__name__ == SIMULATION_GRID for cls in type(grid).__mro__)
    return min(count, SIMULATION_IN_FLIGHT) if simulated else count


def send_and_receive(grid: object, messages: Iterable[Message], timeout: float | None) -> list[Message]:
    """The replies that arrive within ``timeout`` seconds (``None``: wait for all of them).

    A message still unsent at the timeout is never sent: it has no reply, like one sent and unanswered.
    On a grid with ``push_messages`` each message's content is replaced by its packed form before it
    is pushed (:func:`_pack`); the replies come back unpacked.
    """
    messages = list(messages)
    push = getattr(grid, "push_messages", None)
    if push is None:
        return list(grid.send_and_receive(messages, timeout=timeout))  # type: ignore[attr-defined]
    _pack(messages)
    window = in_flight_limit(grid, len(messages))
    unsent = messages[window:]
    waiting = set(push(messages[:window]))
    deadline = None if timeout is None else time.monotonic() + timeout
    replies: list[Message] = []
    wait = FIRST_WAIT
    while waiting:
        arrived = [_unpacked(reply) for reply in grid.pull_messages(waiting)]  # type: ignore[attr-defined]
        replies += arrived
        waiting -= {reply.metadata.reply_to_message_id for reply in arrived}
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        if unsent and len(waiting) < window:
            room = window - len(waiting)
            waiting |= set(push(unsent[:room]))
            unsent = unsent[room:]
        if not waiting:
            break
        time.sleep(wait if left is None else min(wait, left))
        wait = FIRST_WAIT if arrived else min(wait * GROWTH, LONGEST_WAIT)
    return replies


def _pack(messages: list[Message]) -> None:
    """Each message's array records packed (:mod:`stamen.contract.packed`); a content shared by several messages (a
    round's global weights) is packed once."""
    packed: dict[int, RecordDict] = {}
    for message in messages:
        if message.has_content():
            content = message.content
            if id(content) not in packed:
                packed[id(content)] = packed_content(content)
            message.content = packed[id(content)]


def _unpacked(reply: Message) -> Message:
    """``reply`` with its array records unpacked; one that cannot be unpacked stays as it came, for the round's
    reply checks to refuse (its arrays are not the model's: :func:`stamen.server.loop.collect` counts it a failure)."""
    if reply.has_content():
        try:
            reply.content = unpacked_content(reply.content)
        except ValueError as problem:
            log(WARNING, "node %s: %s; its reply is left as it came", reply.metadata.src_node_id, problem)
    return reply
