"""The SuperLink hands a message out only once its arrays are in, sparing the receiver Flower's 1 s back-off.

Flower 1.42 sends a message in two steps: ``push-messages`` stores the message and
its object tree (from then on it can be pulled), then one ``push-object`` per object
whose content the SuperLink lacks (the arrays, the records). A receiver that pulls the
message in between finds an object not yet there and backs off before asking again:
Flower's ``pull_objects`` waits 1 s at the first miss, then 2, 4, ...
(``PULL_INITIAL_BACKOFF``; the SuperNode and the ServerApp's grid use the default, no
flag or variable sets it). With fast pulls (the held pulls of
:mod:`stamen.simulations.deploy.long_poll`, the ServerApp's 2-100 ms polling in
:mod:`stamen.server.transport`) that miss is the rule, not the exception: it cost a
deployed round about a second on each of its two legs.

:class:`MessagesReady` wraps the SuperLink's ASGI app (like the gate and the long
poll; Flower's code is not changed) and watches both directions:

- the ServerApp's ``/v1/runtime/push-messages`` and a SuperNode's
  ``/v1/fleet/push-messages`` (a reply): each message's object IDs are pending from
  the moment the request arrives; once Flower answers, only those it asked to be
  pushed (``objects_to_push``) stay pending;
- ``push-object`` on either API, answered 200: that object is no longer pending;
- ``/v1/fleet/pull-messages`` (a SuperNode) and ``/v1/runtime/pull-messages`` (the
  ServerApp): an answer carrying a message whose objects are still pending is held
  until they are all in, for at most :data:`READY_WAIT` seconds, then sent as it is.

Nothing is asked of Flower's app that the senders did not ask; an answer is only
delayed, never changed or dropped. A request or answer the middleware cannot parse
passes unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

from stamen.simulations.deploy.long_poll import Answer, ASGIApp, Receive, Scope, Send, read_body, replay

READY_WAIT = 5.0  # seconds an answer waits at most for its messages' objects (then it goes as it is)
CHECK_EVERY = 0.002  # seconds between checks while an answer waits
FORGET_AFTER = 600.0  # seconds after which a message's pending objects are forgotten (a sender that gave up)

PUSH_MESSAGES = {"/v1/runtime/push-messages": "runtime", "/v1/fleet/push-messages": "fleet"}
PUSH_OBJECT = {"/v1/runtime/push-object", "/v1/fleet/push-object"}
PULL_MESSAGES = {"/v1/runtime/pull-messages": "runtime", "/v1/fleet/pull-messages": "fleet"}


def _protos(api: str) -> tuple[type, type, type]:
    """(push request, push response, pull response) of ``api``: Flower's wire format."""
    # on use: flwr stays out of this module's import
    from stamen.simulations.flower_internals import wire

    if api == "runtime":
        return wire.PushAppMessagesRequest, wire.PushAppMessagesResponse, wire.PullAppMessagesResponse
    return wire.PushMessagesRequest, wire.PushMessagesResponse, wire.PullMessagesResponse


def _parse(kind: type, body: bytes):
    message = kind()
    try:
        message.ParseFromString(body)
    except Exception:  # not ours to judge: it passes unchanged
        return None
    return message


def object_ids(tree) -> Iterator[str]:
    """Every object ID of an ``ObjectTree``, its root (the message's ID) first."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node.object_id
        stack.extend(node.children)


class MessagesReady:
    """ASGI middleware: hold a pulled message's answer until its objects are in (see the module)."""

    def __init__(self, app: ASGIApp, ready_wait: float = READY_WAIT) -> None:
        self.app = app
        self.ready_wait = ready_wait
        self.pending: dict[str, tuple[set[str], float]] = {}  # message ID -> (object IDs not in yet, since)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path") if scope["type"] == "http" and scope.get("method") == "POST" else None
        if path in PUSH_MESSAGES:
            await self._push_messages(PUSH_MESSAGES[path], scope, receive, send)
        elif path in PUSH_OBJECT:
            await self._push_object(scope, receive, send)
        elif path in PULL_MESSAGES:
            await self._pull_messages(PULL_MESSAGES[path], scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _answer(self, scope: Scope, body: bytes) -> Answer:
        answer = Answer()
        await self.app(scope, replay(body), answer.send)
        return answer

    async def _push_messages(self, api: str, scope: Scope, receive: Receive, send: Send) -> None:
        body, _ = await read_body(receive)
        request_kind, response_kind, _ = _protos(api)
        request = _parse(request_kind, body)
        trees = {} if request is None else {t.object_id: set(object_ids(t)) for t in request.message_object_trees}
        now = time.monotonic()
        self._forget_old(now)
        for message_id, ids in trees.items():  # pending before Flower stores the message: a pull may come at once
            self.pending[message_id] = (ids, now)
        answer = await self._answer(scope, body)
        response = _parse(response_kind, answer.body) if answer.status == 200 else None
        to_push = set() if response is None else set(response.objects_to_push)
        for message_id, ids in trees.items():
            left = ids & to_push
            if left and message_id in self.pending:
                self.pending[message_id] = (left, now)
            else:
                self.pending.pop(message_id, None)
        for message in answer.messages:
            await send(message)

    async def _push_object(self, scope: Scope, receive: Receive, send: Send) -> None:
        # on use: flwr stays out of this module's import
        from stamen.simulations.flower_internals.wire import PushObjectRequest

        body, _ = await read_body(receive)
        answer = await self._answer(scope, body)
        request = _parse(PushObjectRequest, body) if answer.status == 200 and self.pending else None
        if request is not None:
            for message_id, (ids, _) in list(self.pending.items()):
                ids.discard(request.object_id)
                if not ids:
                    del self.pending[message_id]
        for message in answer.messages:
            await send(message)

    async def _pull_messages(self, api: str, scope: Scope, receive: Receive, send: Send) -> None:
        body, _ = await read_body(receive)
        answer = await self._answer(scope, body)
        response = _parse(_protos(api)[2], answer.body) if answer.status == 200 and self.pending else None
        if response is not None:
            waiting = {tree.object_id for tree in response.message_object_trees}
            deadline = time.monotonic() + self.ready_wait
            while any(message_id in self.pending for message_id in waiting) and time.monotonic() < deadline:
                await asyncio.sleep(CHECK_EVERY)
        for message in answer.messages:
            await send(message)

    def _forget_old(self, now: float) -> None:
        for message_id, (_, since) in list(self.pending.items()):
            if now - since > FORGET_AFTER:
                del self.pending[message_id]
