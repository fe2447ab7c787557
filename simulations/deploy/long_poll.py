"""The SuperLink holds a SuperNode's empty message pull a few seconds instead of answering "nothing yet".

Flower 1.42's SuperNode asks the SuperLink for a message (``POST
/v1/fleet/pull-messages``) and, when there is none, sleeps 3 s before asking again
(a fixed ``time.sleep(3)`` in ``flwr.supernode.start_client_internal``; no flag or
environment variable changes it). It asks right after sending its reply, when the
next round's message cannot exist yet (the server waits for every reply), so every
round paid that nap: up to 3 s per round on top of the clients' own work.

:class:`FleetLongPoll` wraps the SuperLink's ASGI app (as
:class:`~simulations.deploy.gate.OperatorGate` does; Flower's code is not changed).
A pull that finds no message is asked again inside the SuperLink, every few tens of
milliseconds, for up to :data:`HOLD` seconds; the SuperNode gets the first answer
that carries a message, or the empty answer when the time is up (and then naps as
before). The same signed request is asked again: Flower's SuperNode signature
covers a timestamp valid for minutes, not one use, so authentication is unchanged.

Only a successful protobuf ``PullMessagesResponse`` with no message is held; any
other answer (errors, other paths, JSON) passes at once. A SuperNode that hangs up
while held is not asked for again, so no message is handed to a closed connection
after the hang-up was seen. :data:`HOLD` stays well under the SuperNode's 30 s
read timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PULL_PATH = "/v1/fleet/pull-messages"
PROTOBUF = b"application/protobuf"
HOLD = 10.0  # seconds an empty pull is held at most (the SuperNode's read timeout is 30 s)
FIRST_WAIT = 0.01  # seconds before asking again, growing to LONGEST_WAIT
LONGEST_WAIT = 0.1
GROWTH = 1.5


def has_no_message(body: bytes) -> bool:
    """Whether ``body`` is a ``PullMessagesResponse`` without messages (a bad one counts as not empty)."""
    from simulations.flower_internals.wire import PullMessagesResponse  # noqa: PLC0415 - Flower's wire format

    response = PullMessagesResponse()
    try:
        response.ParseFromString(body)
    except Exception:  # noqa: BLE001 - not ours to judge: pass it on as it is
        return False
    return len(response.messages_list) == 0


class Answer:
    """One answer of the wrapped app, kept until it is sent or dropped."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def send(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0].get("status", 0)) if self.messages else 0

    @property
    def content_type(self) -> bytes:
        headers = dict(self.messages[0].get("headers", [])) if self.messages else {}
        return bytes(headers.get(b"content-type", b"")).split(b";")[0].strip().lower()

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")

    def held(self) -> bool:
        return self.status == 200 and self.content_type == PROTOBUF and has_no_message(self.body)


class FleetLongPoll:
    """ASGI middleware: hold empty Fleet ``pull-messages`` answers up to ``hold`` seconds."""

    def __init__(self, app: ASGIApp, hold: float = HOLD) -> None:
        self.app = app
        self.hold = hold

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != PULL_PATH or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, disconnected = await read_body(receive)
        deadline = time.monotonic() + self.hold
        wait = FIRST_WAIT
        hang_up = asyncio.ensure_future(_wait_for_disconnect(receive)) if not disconnected else None
        try:
            while True:
                answer = Answer()
                await self.app(scope, replay(body), answer.send)
                left = deadline - time.monotonic()
                if disconnected or left <= 0 or not answer.held():
                    break
                done, _ = await asyncio.wait({hang_up}, timeout=min(wait, left))
                if done:
                    return  # the SuperNode hung up: nobody to answer
                wait = min(wait * GROWTH, LONGEST_WAIT)
        finally:
            if hang_up is not None:
                hang_up.cancel()
        for message in answer.messages:
            await send(message)


async def read_body(receive: Receive) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), True
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), False


async def _wait_for_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def replay(body: bytes) -> Receive:
    """A ``receive`` that gives ``body`` once, then waits (as a connection that stays open does)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # never set: the wrapped app is not told of a hang-up it need not know
        return {"type": "http.disconnect"}

    return receive
