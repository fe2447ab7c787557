"""A pulled message is handed out once the objects its sender still had to push are in, in both directions."""

import asyncio
import time

from flwr.proto.fleet_pb2 import PullMessagesResponse, PushMessagesRequest, PushMessagesResponse
from flwr.proto.message_pb2 import Message, ObjectTree, PushObjectRequest
from flwr.proto.runtime_pb2 import PullAppMessagesResponse, PushAppMessagesRequest, PushAppMessagesResponse

from stamen.simulations.deploy.ready_messages import MessagesReady, object_ids

TREE = ObjectTree(
    object_id="msg",
    children=[ObjectTree(object_id="record", children=[ObjectTree(object_id="a"), ObjectTree(object_id="b")])],
)


class Link:
    """A stand-in SuperLink: pushes are answered with ``to_push``; a pull returns the message at once."""

    def __init__(self, to_push: list[str]) -> None:
        self.to_push = to_push

    async def __call__(self, scope, receive, send) -> None:
        await receive()
        path = scope["path"]
        if path == "/v1/runtime/push-messages":
            body = PushAppMessagesResponse(message_ids=["msg"], objects_to_push=self.to_push).SerializeToString()
        elif path == "/v1/fleet/push-messages":
            body = PushMessagesResponse(objects_to_push=self.to_push).SerializeToString()
        elif path == "/v1/fleet/pull-messages":
            body = PullMessagesResponse(messages_list=[Message()], message_object_trees=[TREE]).SerializeToString()
        elif path == "/v1/runtime/pull-messages":
            body = PullAppMessagesResponse(messages_list=[Message()], message_object_trees=[TREE]).SerializeToString()
        else:
            body = b""
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/x")]})
        await send({"type": "http.response.body", "body": body})


async def _request(app, path: str, body: bytes = b"") -> tuple[bytes, float]:
    sent, arrived = [], [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if arrived:
            return arrived.pop()
        await asyncio.Event().wait()

    async def send(message):
        sent.append(message)

    started = time.monotonic()
    await app({"type": "http", "path": path, "method": "POST"}, receive, send)
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body"), time.monotonic() - started


def _push_object(object_id: str) -> bytes:
    return PushObjectRequest(object_id=object_id, object_content=b"x").SerializeToString()


def test_every_object_of_a_tree_is_listed_root_first():
    assert next(object_ids(TREE)) == "msg" and set(object_ids(TREE)) == {"msg", "record", "a", "b"}


def test_a_server_message_is_handed_to_a_supernode_once_its_objects_are_in():
    async def scenario():
        app = MessagesReady(Link(to_push=["a", "b"]), ready_wait=5.0)
        push = PushAppMessagesRequest(messages_list=[Message()], message_object_trees=[TREE]).SerializeToString()
        await _request(app, "/v1/runtime/push-messages", push)
        pull = asyncio.ensure_future(_request(app, "/v1/fleet/pull-messages"))
        await asyncio.sleep(0.2)
        assert not pull.done()  # "a" and "b" are not in yet
        await _request(app, "/v1/runtime/push-object", _push_object("a"))
        await asyncio.sleep(0.1)
        assert not pull.done()
        await _request(app, "/v1/runtime/push-object", _push_object("b"))
        body, seconds = await pull
        assert PullMessagesResponse.FromString(body).message_object_trees[0].object_id == "msg"
        assert 0.3 <= seconds < 1.0 and app.pending == {}

    asyncio.run(scenario())


def test_a_reply_is_handed_to_the_serverapp_once_its_objects_are_in():
    async def scenario():
        app = MessagesReady(Link(to_push=["b"]), ready_wait=5.0)  # "a" was in the store already
        push = PushMessagesRequest(messages_list=[Message()], message_object_trees=[TREE]).SerializeToString()
        await _request(app, "/v1/fleet/push-messages", push)
        assert app.pending["msg"][0] == {"b"}
        pull = asyncio.ensure_future(_request(app, "/v1/runtime/pull-messages"))
        await asyncio.sleep(0.2)
        assert not pull.done()
        await _request(app, "/v1/fleet/push-object", _push_object("b"))
        _, seconds = await pull
        assert seconds < 1.0

    asyncio.run(scenario())


def test_nothing_pending_passes_at_once_and_a_sender_that_never_pushes_delays_only_up_to_the_limit():
    async def scenario():
        ready = MessagesReady(Link(to_push=[]), ready_wait=5.0)
        push = PushAppMessagesRequest(messages_list=[Message()], message_object_trees=[TREE]).SerializeToString()
        await _request(ready, "/v1/runtime/push-messages", push)
        assert ready.pending == {}
        _, seconds = await _request(ready, "/v1/fleet/pull-messages")
        assert seconds < 0.1

        stuck = MessagesReady(Link(to_push=["a"]), ready_wait=0.3)
        await _request(stuck, "/v1/runtime/push-messages", push)
        body, seconds = await _request(stuck, "/v1/fleet/pull-messages")
        assert 0.3 <= seconds < 1.0  # then the answer goes as it is
        assert PullMessagesResponse.FromString(body).message_object_trees[0].object_id == "msg"

    asyncio.run(scenario())
