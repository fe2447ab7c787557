"""The SuperLink holds an empty Fleet pull until a message is there (or time is up), and nothing else."""

import asyncio
import time

from flwr.proto.fleet_pb2 import PullMessagesResponse
from flwr.proto.message_pb2 import Message

from simulations.deploy.long_poll import PULL_PATH, FleetLongPoll

EMPTY = PullMessagesResponse().SerializeToString()
WITH_MESSAGE = PullMessagesResponse(messages_list=[Message()]).SerializeToString()
PULL = {"type": "http", "path": PULL_PATH, "method": "POST"}


class Link:
    """A stand-in SuperLink app: no message until ``ready_after`` calls, then one."""

    def __init__(self, ready_after: int, status: int = 200, content_type: bytes = b"application/protobuf") -> None:
        self.ready_after, self.status, self.content_type = ready_after, status, content_type
        self.calls, self.bodies = 0, []

    async def __call__(self, scope, receive, send) -> None:
        self.calls += 1
        self.bodies.append((await receive())["body"])
        body = WITH_MESSAGE if self.calls > self.ready_after else EMPTY
        await send(
            {"type": "http.response.start", "status": self.status, "headers": [(b"content-type", self.content_type)]}
        )
        await send({"type": "http.response.body", "body": body})


def _ask(app, scope=PULL, hang_up_after: float | None = None) -> tuple[list[dict], float]:
    async def run():
        sent, arrived = [], [{"type": "http.request", "body": b"signed request", "more_body": False}]

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

    return asyncio.run(run())


def _body(sent: list[dict]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def test_an_empty_pull_waits_for_the_message_and_asks_with_the_same_request():
    link = Link(ready_after=4)
    sent, _ = _ask(FleetLongPoll(link, hold=5.0))
    assert link.calls == 5 and set(link.bodies) == {b"signed request"}
    assert sent[0]["status"] == 200 and _body(sent) == WITH_MESSAGE


def test_a_pull_with_a_message_or_another_answer_passes_at_once():
    for link in (
        Link(ready_after=0),
        Link(ready_after=99, status=401),
        Link(ready_after=99, content_type=b"application/json"),
    ):
        sent, _ = _ask(FleetLongPoll(link, hold=5.0))
        assert link.calls == 1 and sent[0]["status"] == link.status
    other = Link(ready_after=99)
    _ask(FleetLongPoll(other, hold=5.0), scope={**PULL, "path": "/v1/fleet/send-node-heartbeat"})
    assert other.calls == 1


def test_when_time_is_up_the_empty_answer_goes_out():
    link = Link(ready_after=10_000)
    sent, seconds = _ask(FleetLongPoll(link, hold=0.5))
    assert 0.5 <= seconds < 2.0 and link.calls > 2
    assert sent[0]["status"] == 200 and _body(sent) == EMPTY


def test_a_supernode_that_hangs_up_is_not_answered_nor_asked_for_again():
    link = Link(ready_after=10_000)
    sent, seconds = _ask(FleetLongPoll(link, hold=5.0), hang_up_after=0.3)
    calls = link.calls
    assert sent == [] and seconds < 2.0
    time.sleep(0.3)
    assert link.calls == calls
