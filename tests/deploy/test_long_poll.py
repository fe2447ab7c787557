"""The SuperLink holds an empty Fleet pull until a push for its node is answered (or time is up), and nothing else."""

import asyncio
import time

from flwr.proto.fleet_pb2 import PullMessagesRequest, PullMessagesResponse
from flwr.proto.message_pb2 import Message, Metadata
from flwr.proto.node_pb2 import Node
from flwr.proto.runtime_pb2 import PushAppMessagesRequest

from stamen.simulations.deploy.long_poll import PULL_PATH, PUSH_PATH, FleetLongPoll

EMPTY = PullMessagesResponse().SerializeToString()
WITH_MESSAGE = PullMessagesResponse(messages_list=[Message()]).SerializeToString()
PULL = {"type": "http", "path": PULL_PATH, "method": "POST"}
PUSH = {"type": "http", "path": PUSH_PATH, "method": "POST"}


def pull_body(node: int) -> bytes:
    return PullMessagesRequest(node=Node(node_id=node)).SerializeToString()


def push_body(*nodes: int) -> bytes:
    messages = [Message(metadata=Metadata(dst_node_id=node)) for node in nodes]
    return PushAppMessagesRequest(messages_list=messages).SerializeToString()


class Link:
    """A stand-in SuperLink app: a pull gets a message once a push addressed its node.

    ``push_during_first_pull``: the first pull's handler has a push for that node answered
    while it looks (and still answers empty, as Flower's query made before the push would).
    """

    def __init__(self, status: int = 200, content_type: bytes = b"application/protobuf") -> None:
        self.status, self.content_type = status, content_type
        self.inbox: dict[int, int] = {}
        self.pulls: dict[int, int] = {}
        self.bodies: list[bytes] = []
        self.other_calls = 0
        self.wrapper = None
        self.push_during_first_pull: int | None = None

    async def __call__(self, scope, receive, send) -> None:
        body = (await receive())["body"]
        if scope["path"] == PUSH_PATH:
            try:
                messages = PushAppMessagesRequest.FromString(body).messages_list
            except Exception:  # an unreadable push stores nothing here
                messages = []
            for message in messages:
                node = message.metadata.dst_node_id
                self.inbox[node] = self.inbox.get(node, 0) + 1
            await self._answer(send, b"")
            return
        if scope["path"] != PULL_PATH:
            self.other_calls += 1
            await self._answer(send, EMPTY)
            return
        self.bodies.append(body)
        node = PullMessagesRequest.FromString(body).node.node_id
        self.pulls[node] = self.pulls.get(node, 0) + 1
        found = self.inbox.get(node, 0) > 0
        if self.push_during_first_pull is not None:
            pushed, self.push_during_first_pull = self.push_during_first_pull, None
            await _call(self.wrapper, PUSH, push_body(pushed))
        if found:
            self.inbox[node] -= 1
        await self._answer(send, WITH_MESSAGE if found else EMPTY)

    async def _answer(self, send, body: bytes) -> None:
        await send(
            {"type": "http.response.start", "status": self.status, "headers": [(b"content-type", self.content_type)]}
        )
        await send({"type": "http.response.body", "body": body})


def _wrapped(link: Link, **options) -> FleetLongPoll:
    link.wrapper = FleetLongPoll(link, **options)
    return link.wrapper


async def _call(app, scope, body: bytes, hang_up_after: float | None = None) -> tuple[list[dict], float]:
    sent, arrived = [], [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if arrived:
            return arrived.pop()
        if hang_up_after is None:
            await asyncio.Event().wait()
        await asyncio.sleep(hang_up_after)
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    started = time.monotonic()
    await app(scope, receive, send)
    return sent, time.monotonic() - started


def _ask(app, body: bytes, scope=PULL, hang_up_after: float | None = None) -> tuple[list[dict], float]:
    return asyncio.run(_call(app, scope, body, hang_up_after))


def _body(sent: list[dict]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def test_a_held_pull_is_asked_again_when_a_push_for_its_node_is_answered_and_only_its_pull():
    link = Link()
    app = _wrapped(link, hold=5.0, recheck=5.0)

    async def scenario():
        one = asyncio.ensure_future(_call(app, PULL, pull_body(1)))
        two = asyncio.ensure_future(_call(app, PULL, pull_body(2)))
        await asyncio.sleep(0.3)
        pushed_at = time.monotonic()
        await _call(app, PUSH, push_body(1))
        sent, _ = await one
        answered_after = time.monotonic() - pushed_at
        two.cancel()
        return sent, answered_after

    sent, answered_after = asyncio.run(scenario())
    assert sent[0]["status"] == 200 and _body(sent) == WITH_MESSAGE
    assert answered_after < 2.5  # woken by the push, not by the 5 s recheck (slack for a loaded machine)
    assert link.pulls == {1: 2, 2: 1}  # node 2's pull was not asked again: the push was not for it
    assert set(link.bodies) == {pull_body(1), pull_body(2)}  # the same signed request asked again


def test_without_a_push_a_held_pull_is_asked_every_recheck_only_and_the_empty_answer_goes_out_at_the_end():
    link = Link()
    sent, seconds = _ask(_wrapped(link, hold=1.0, recheck=0.3), pull_body(7))
    assert 1.0 <= seconds < 4.0
    # asked at 0, 0.3, 0.6, 0.9 s and at the end, not every 10-100 ms; fewer when loaded
    assert 2 <= link.pulls[7] <= 5
    assert sent[0]["status"] == 200 and _body(sent) == EMPTY


def test_a_push_answered_while_flower_looked_makes_the_pull_ask_again_at_once():
    link = Link()
    link.push_during_first_pull = 3
    sent, seconds = _ask(_wrapped(link, hold=10.0, recheck=5.0), pull_body(3))
    assert _body(sent) == WITH_MESSAGE and link.pulls[3] == 2
    assert seconds < 2.5  # no wait for the 5 s recheck: the wake-up had already happened


def _pulls_after_push(node_body: bytes, push: bytes) -> tuple[Link, float]:
    """Hold one pull 1 s; 0.3 s in, answer ``push``; how often the link was asked, and how long the pull took."""
    link = Link()
    app = _wrapped(link, hold=1.0, recheck=5.0)

    async def scenario():
        pull = asyncio.ensure_future(_call(app, PULL, node_body))
        await asyncio.sleep(0.3)
        await _call(app, PUSH, push)
        return (await pull)[1]

    return link, asyncio.run(scenario())


def test_a_pull_whose_node_cannot_be_read_is_woken_by_every_push_and_an_unreadable_push_wakes_every_pull():
    # asked at 0 s, when the push is answered (0.3 s: woken) and when the 1 s hold ends
    link, seconds = _pulls_after_push(b"", push_body(9))  # no node in the request: every push may be for it
    assert link.pulls == {0: 3} and 1.0 <= seconds < 4.0
    link, _ = _pulls_after_push(pull_body(4), b"\xff not a push request")  # nodes unknown: every pull asks again
    assert link.pulls == {4: 3}
    link, _ = _pulls_after_push(pull_body(4), push_body(5))  # the control: a push for another node does not wake it
    assert link.pulls == {4: 2}


def test_a_pull_with_a_message_or_another_answer_passes_at_once():
    ready = Link()
    ready.inbox[1] = 1
    for link in (ready, Link(status=401), Link(content_type=b"application/json")):
        sent, _ = _ask(_wrapped(link, hold=5.0), pull_body(1))
        assert link.pulls == {1: 1} and sent[0]["status"] == link.status
    other = Link()
    _ask(_wrapped(other, hold=5.0), pull_body(1), scope={**PULL, "path": "/v1/fleet/send-node-heartbeat"})
    assert other.other_calls == 1 and other.pulls == {}


def test_a_supernode_that_hangs_up_is_not_answered_nor_asked_for_again():
    link = Link()
    sent, seconds = _ask(_wrapped(link, hold=5.0, recheck=0.1), pull_body(1), hang_up_after=0.3)
    calls = link.pulls[1]
    assert sent == [] and seconds < 4.0 and calls >= 2
    time.sleep(0.3)
    assert link.pulls[1] == calls
