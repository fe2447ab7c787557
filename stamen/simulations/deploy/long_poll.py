"""The SuperLink holds a SuperNode's empty message pull a few seconds instead of answering "nothing yet".

Flower 1.42's SuperNode asks the SuperLink for a message (``POST
/v1/fleet/pull-messages``) and, when there is none, sleeps 3 s before asking again
(a fixed ``time.sleep(3)`` in ``flwr.supernode.start_client_internal``; no flag or
environment variable changes it). It asks right after sending its reply, when the
next round's message cannot exist yet (the server waits for every reply), so every
round paid that nap: up to 3 s per round on top of the clients' own work.

Stamen's SuperLink holds a pull that finds no message until one arrives, for up to
:data:`HOLD` seconds; the SuperNode gets the first answer that carries a
message, or the empty answer when the time is up (and then naps as before).

:class:`FleetLongPoll` wraps the SuperLink's ASGI app (as
:class:`~stamen.simulations.deploy.gate.OperatorGate` does; Flower's code is not changed).
**A held pull is asked again when a message for its node may have arrived**, not on a
timer: a SuperNode's messages come from the ServerApp's ``/v1/runtime/push-messages``,
so when Flower has answered such a push, the held pulls of the nodes it addressed
(``dst_node_id``; every held pull when the push cannot be read) are asked again at once.
Otherwise a held pull is asked again every :data:`RECHECK` seconds only, a safety net for
a message arriving by any other route. Each ask runs Flower's whole pull handler (the
node's signature checked, its node ID and messages looked up in the link state's
database, some milliseconds of the SuperLink's one process), so asking every 10 to 100 ms
would cost the SuperLink about ten asks a second per waiting SuperNode, which saturates two
cores at 10 to 20 SuperNodes (benchmarks/deploy-nodes.md).

The same signed request is asked again: Flower's SuperNode signature covers a timestamp
valid for minutes, not one use, so authentication is unchanged. Only a successful
protobuf ``PullMessagesResponse`` with no message is held; any other answer (errors,
other paths, JSON) passes at once. A SuperNode that hangs up while held is not asked for
again, so no message is handed to a closed connection after the hang-up was seen.
:data:`HOLD` stays well under the SuperNode's 30 s read timeout.
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
PUSH_PATH = "/v1/runtime/push-messages"  # the ServerApp's messages: where a SuperNode's messages come from
PROTOBUF = b"application/protobuf"
HOLD = 10.0  # seconds an empty pull is held at most (the SuperNode's read timeout is 30 s)
RECHECK = 2.0  # seconds between asks of a held pull when no push addressed its node


def pulling_node(body: bytes) -> int | None:
    """The node ID of a Fleet ``PullMessagesRequest`` (``None`` when it cannot be read)."""
    from stamen.simulations.flower_internals.wire import PullMessagesRequest  # Flower's wire format

    request = PullMessagesRequest()
    try:
        request.ParseFromString(body)
    except Exception:  # not ours to judge: the pull is then woken by every push
        return None
    return int(request.node.node_id) if request.HasField("node") else None


def addressed_nodes(body: bytes) -> set[int] | None:
    """The nodes a ServerApp's ``PushAppMessagesRequest`` sends messages to (``None`` when it cannot be read)."""
    from stamen.simulations.flower_internals.wire import PushAppMessagesRequest  # Flower's wire format

    request = PushAppMessagesRequest()
    try:
        request.ParseFromString(body)
    except Exception:  # not ours to judge: every held pull is then asked again
        return None
    return {int(message.metadata.dst_node_id) for message in request.messages_list}


class Arrivals:
    """Which nodes may have a new message since a held pull last asked, and the wake-ups of the waiting pulls.

    A pull whose node could not be read (``None``) counts every push as its own.
    """

    def __init__(self) -> None:
        self._pushes: dict[int, int] = {}  # node -> pushes that addressed it
        self._unread = 0  # pushes whose nodes could not be read (they address every node)
        self._total = 0
        self._waiting: dict[asyncio.Event, int | None] = {}

    def seen(self, node: int | None) -> tuple[int, int]:
        """A mark that changes whenever a push may have brought ``node`` a message."""
        return (self._total, 0) if node is None else (self._pushes.get(node, 0), self._unread)

    def waiter(self, node: int | None) -> asyncio.Event:
        """An event set by the next push that may bring ``node`` a message; :meth:`forget` it after waiting."""
        event = asyncio.Event()
        self._waiting[event] = node
        return event

    def forget(self, event: asyncio.Event) -> None:
        self._waiting.pop(event, None)

    def arrived(self, nodes: set[int] | None) -> None:
        """A push to ``nodes`` (``None``: nodes unknown) was answered: wake the pulls it concerns."""
        self._total += 1
        if nodes is None:
            self._unread += 1
        else:
            for node in nodes:
                self._pushes[node] = self._pushes.get(node, 0) + 1
        for event, node in list(self._waiting.items()):
            if nodes is None or node is None or node in nodes:
                del self._waiting[event]
                event.set()


def has_no_message(body: bytes) -> bool:
    """Whether ``body`` is a ``PullMessagesResponse`` without messages (a bad one counts as not empty)."""
    from stamen.simulations.flower_internals.wire import PullMessagesResponse  # Flower's wire format

    response = PullMessagesResponse()
    try:
        response.ParseFromString(body)
    except Exception:  # not ours to judge: pass it on as it is
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
    """ASGI middleware: hold empty Fleet ``pull-messages`` answers up to ``hold`` seconds (see the module)."""

    def __init__(self, app: ASGIApp, hold: float = HOLD, recheck: float = RECHECK) -> None:
        self.app = app
        self.hold = hold
        self.recheck = recheck
        self.arrivals = Arrivals()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" and scope.get("method") == "POST" else None
        if path == PULL_PATH:
            await self._pull(scope, receive, send)
        elif path == PUSH_PATH:
            body, _ = await read_body(receive)
            try:
                await self.app(scope, replay(body), send)
            finally:
                self.arrivals.arrived(addressed_nodes(body))
        else:
            await self.app(scope, receive, send)

    async def _pull(self, scope: Scope, receive: Receive, send: Send) -> None:
        body, disconnected = await read_body(receive)
        node = pulling_node(body)
        deadline = time.monotonic() + self.hold
        hang_up = asyncio.ensure_future(_wait_for_disconnect(receive)) if not disconnected else None
        try:
            while True:
                since = self.arrivals.seen(node)
                answer = Answer()
                await self.app(scope, replay(body), answer.send)
                left = deadline - time.monotonic()
                if disconnected or left <= 0 or not answer.held():
                    break
                if self.arrivals.seen(node) != since:
                    continue  # a push for this node was answered while Flower looked: ask again at once
                if await self._wait(node, hang_up, min(self.recheck, left)):
                    return  # the SuperNode hung up: nobody to answer
        finally:
            if hang_up is not None:
                hang_up.cancel()
        for message in answer.messages:
            await send(message)

    async def _wait(self, node: int | None, hang_up: asyncio.Future | None, timeout: float) -> bool:
        """Wait for a push that may concern ``node``, the hang-up or ``timeout``; whether the SuperNode hung up."""
        event = self.arrivals.waiter(node)
        woken = asyncio.ensure_future(event.wait())
        try:
            waits = {woken} if hang_up is None else {hang_up, woken}
            done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            self.arrivals.forget(event)
        return hang_up in done


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
