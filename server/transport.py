"""Sending messages and waiting for the replies, without Flower's three-second naps.

Flower 1.42's ``Grid.send_and_receive`` pushes the messages, then pulls the replies
every 3 s (``HttpGrid``, the grid of a ServerApp process in a simulation and in a
deployment), so a round lasts a whole multiple of 3 s however fast the clients are.
:func:`send_and_receive` does the same through the public ``push_messages`` /
``pull_messages`` API, polling from a few milliseconds up to 0.1 s between pulls: a
short round ends within a few milliseconds of its last reply, a long one costs at most
one pull per 0.1 s. A grid without that API (the in-process grid, which answers at
once) is asked as it is.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from flwr.app import Message

FIRST_WAIT = 0.002  # seconds before the first pull
LONGEST_WAIT = 0.1  # seconds between pulls, at most
GROWTH = 1.5


def send_and_receive(grid: object, messages: Iterable[Message], timeout: float | None) -> list[Message]:
    """The replies that arrive within ``timeout`` seconds (``None``: wait for all of them)."""
    messages = list(messages)
    push = getattr(grid, "push_messages", None)
    if push is None:
        return list(grid.send_and_receive(messages, timeout=timeout))  # type: ignore[attr-defined]
    waiting = set(push(messages))
    deadline = None if timeout is None else time.monotonic() + timeout
    replies: list[Message] = []
    wait = FIRST_WAIT
    while waiting:
        arrived = list(grid.pull_messages(waiting))  # type: ignore[attr-defined]
        replies += arrived
        waiting -= {reply.metadata.reply_to_message_id for reply in arrived}
        if not waiting:
            break
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        time.sleep(wait if left is None else min(wait, left))
        wait = FIRST_WAIT if arrived else min(wait * GROWTH, LONGEST_WAIT)
    return replies
