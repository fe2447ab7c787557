"""A ClientApp task's side of the SuperNode's Runtime API: the client, and the task's inputs pulled with it.

Replaces: ``flwr.supercore.runtime`` (``RuntimeHttpClient``), ``flwr.supercore.runtime.tracing``,
``flwr.supercore.interceptors``, ``flwr.supercore.retry``, ``flwr.common.serde``
(``context_from_proto``, ``fab_from_proto``, ``run_from_proto``), ``flwr.proto.node_pb2``,
``flwr.proto.runtime_pb2``, and ``flwr.supercore.inflatable.inflatable_protobuf_utils`` and
``flwr.supercore.inflatable.inflatable_utils`` (pulling a message's object tree), none public API.

:func:`runtime_client` builds the client as ``flwr-clientapp``'s ``run_clientapp``
(``flwr.supernode.runtime.run_clientapp``) builds it, and :func:`pull_task_input` is that
module's ``pull_task_input`` with one difference: the back-off of the object pull is a
parameter (Flower's is 1 s at the first miss, then 2, 4, ... up to 10 s), which the resident
ClientApp (:mod:`stamen.simulations.deploy.resident_clientapp`) sets to a few milliseconds. Its tries
are not counted: Flower's limit of 500 tries an object, spent at a few milliseconds each, gave
up after about 25 s on an object the SuperNode was still receiving (a 20-node deployment on two
loaded cores lost a client's reply that way, benchmarks/deploy-nodes.md), where Flower's own
back-off spends them in over an hour. The pull's time limit, Flower's (``PULL_MAX_TIME``, 2 h),
bounds the wait as it does for ``flwr-clientapp``.

Dropping it: once Flower's ``pull_task_input`` takes the back-off (or a ClientApp can be
kept loaded across tasks), call Flower's, or drop the resident ClientApp altogether.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flwr.app import Message
from flwr.common.serde import context_from_proto, fab_from_proto, run_from_proto
from flwr.proto.node_pb2 import Node
from flwr.proto.runtime_pb2 import PullAppMessagesRequest, PullTaskInputRequest
from flwr.supercore.inflatable.inflatable_protobuf_utils import (
    make_confirm_message_received_fn_protobuf,
    make_pull_object_fn_protobuf,
)
from flwr.supercore.inflatable.inflatable_utils import pull_and_inflate_object_from_tree
from flwr.supercore.interceptors import RuntimeTokenHttpInterceptor, RuntimeVersionHttpInterceptor
from flwr.supercore.retry import make_simple_http_retry_invoker
from flwr.supercore.runtime import RuntimeHttpClient
from flwr.supercore.runtime.tracing import RuntimeTracingInterceptor

from stamen.simulations.flower_internals.task_identity import set_task_identity


def runtime_client(
    runtime_api_address: str, token: str, insecure: bool, root_certificates: Path | None
) -> tuple[Any, Any]:
    """Flower's Runtime API client for one task, and its retry invoker, built as ``run_clientapp`` builds them."""
    retry_invoker = make_simple_http_retry_invoker()
    certificates = None if root_certificates is None else root_certificates.read_bytes()
    client = RuntimeHttpClient.from_server_address(
        server_address=runtime_api_address,
        insecure=insecure,
        root_certificates=certificates,
        interceptors=[
            RuntimeTracingInterceptor(),
            RuntimeVersionHttpInterceptor(component_name="flwr-clientapp"),
            RuntimeTokenHttpInterceptor(token),
        ],
        retry_invoker=retry_invoker,
    )
    return client, retry_invoker


def pull_task_input(client: Any, initial_backoff: float, backoff_cap: float) -> tuple[Message, Any, Any, Any]:
    """The task's message, context, run and FAB: Flower's ``pull_task_input`` with the object pull's back-off given.

    Makes this process the task (:func:`.task_identity.set_task_identity`), as Flower's does.
    """
    inputs = client.PullTaskInput(PullTaskInputRequest())
    set_task_identity(run_id=inputs.run.run_id, node_id=inputs.context.node_id, task_id=inputs.task_id)
    context, run, fab = context_from_proto(inputs.context), run_from_proto(inputs.run), fab_from_proto(inputs.fab)
    pulled = client.PullMessages(PullAppMessagesRequest())
    if not pulled.messages_list:
        raise RuntimeError("No messages received from Runtime API")
    node = Node(node_id=context.node_id)
    tree = pulled.message_object_trees[0]
    message = pull_and_inflate_object_from_tree(
        tree,
        make_pull_object_fn_protobuf(client.PullObject, node, context.run_id),
        make_confirm_message_received_fn_protobuf(client.ConfirmMessageReceived, node, context.run_id),
        return_type=Message,
        initial_backoff=initial_backoff,
        backoff_cap=backoff_cap,
        max_tries_per_object=None,  # time-bound only (see the module docstring)
    )
    message.metadata.__dict__["_message_id"] = tree.object_id  # the deflated message lacks its own id, as in Flower
    return message, context, run, fab
