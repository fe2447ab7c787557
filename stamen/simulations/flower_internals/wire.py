"""The protobuf messages of the SuperLink's Fleet and Runtime APIs (Flower's wire format).

Replaces: ``flwr.proto.fleet_pb2`` (``PullMessagesRequest``, ``PullMessagesResponse``, ``PushMessagesRequest``,
``PushMessagesResponse``), ``flwr.proto.runtime_pb2`` (``PullAppMessagesResponse``,
``PushAppMessagesRequest``, ``PushAppMessagesResponse``) and ``flwr.proto.message_pb2``
(``PushObjectRequest``), none public API.

The gated SuperLink's middlewares (:mod:`stamen.simulations.deploy.long_poll`,
:mod:`stamen.simulations.deploy.ready_messages`) read the requests and answers that pass through
them to hold a pull until there is something to hand out; they never change one. A field
renamed or moved in a new Flower shows up here and in ``tests/deploy/test_long_poll.py``
and ``tests/deploy/test_ready_messages.py``.

Dropping it: once Flower itself holds empty pulls and hands out only complete messages
(no 3 s nap, no 1 s object back-off), drop the two middlewares and this module with them.
"""

from __future__ import annotations

from flwr.proto.fleet_pb2 import PullMessagesRequest, PullMessagesResponse, PushMessagesRequest, PushMessagesResponse
from flwr.proto.message_pb2 import PushObjectRequest
from flwr.proto.runtime_pb2 import PullAppMessagesResponse, PushAppMessagesRequest, PushAppMessagesResponse

__all__ = [
    "PullAppMessagesResponse",
    "PullMessagesRequest",
    "PullMessagesResponse",
    "PushAppMessagesRequest",
    "PushAppMessagesResponse",
    "PushMessagesRequest",
    "PushMessagesResponse",
    "PushObjectRequest",
]
