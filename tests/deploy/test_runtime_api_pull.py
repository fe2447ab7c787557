"""stamen/simulations/flower_internals/runtime_api.py: a task's message pulled with a short back-off waits as long as
Flower's own pull would, however many tries that takes.

With a back-off of milliseconds, Flower's limit of 500 tries an object gave up after about 25 s on
an object the SuperNode was still receiving (a 20-node deployment on two loaded cores lost a
client's reply that way). Here the SuperNode (a fake Runtime API) has the message's objects only
from each one's 601st pull on: the task still gets its message, whole.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.common.serde import context_to_proto, fab_to_proto, message_to_proto, run_to_proto
from flwr.proto.message_pb2 import PullObjectResponse  # pylint: disable=no-name-in-module
from flwr.proto.runtime_pb2 import PullAppMessagesResponse, PullTaskInputResponse  # pylint: disable=no-name-in-module
from flwr.supercore.fab import Fab
from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects, get_object_tree
from flwr.supercore.run import Run

from stamen.simulations.flower_internals.runtime_api import pull_task_input
from stamen.simulations.flower_internals.task_identity import running_as_task

UNAVAILABLE_PULLS = 600  # of each object: more than Flower's 500 tries an object


class SlowSuperNode:
    """The Runtime API of a SuperNode that is still receiving the task's message for a while."""

    def __init__(self, message: Message, context: Context, run: Run) -> None:
        self.objects = {object_id: obj.deflate() for object_id, obj in get_all_nested_objects(message).items()}
        self.tree = get_object_tree(message)
        self.message = message_to_proto(message)
        self.inputs = PullTaskInputResponse(
            context=context_to_proto(context), run=run_to_proto(run), fab=fab_to_proto(Fab("", b"", {})), task_id=3
        )
        self.pulls: dict[str, int] = {}
        self.confirmed = False

    def PullTaskInput(self, request):  # the Runtime API's method names
        return self.inputs

    def PullMessages(self, request):
        return PullAppMessagesResponse(messages_list=[self.message], message_object_trees=[self.tree])

    def PullObject(self, request):
        self.pulls[request.object_id] = self.pulls.get(request.object_id, 0) + 1
        if self.pulls[request.object_id] <= UNAVAILABLE_PULLS:
            return PullObjectResponse(object_found=True, object_available=False)
        return PullObjectResponse(
            object_found=True, object_available=True, object_content=self.objects[request.object_id]
        )

    def ConfirmMessageReceived(self, request):
        self.confirmed = True
        return SimpleNamespace()


def test_a_message_the_supernode_is_still_receiving_is_waited_for_past_flowers_500_tries():
    run = Run.create_empty(5)
    context = Context(run_id=5, node_id=9, node_config={}, state=RecordDict(), run_config={})
    with running_as_task(run_id=5, node_id=SUPERLINK_NODE_ID, task_id=1):
        content = RecordDict({"w": ArrayRecord([np.arange(6.0)]), "c": ConfigRecord({"round": 2})})
        message = Message(content, dst_node_id=9, message_type="train")
    supernode = SlowSuperNode(message, context, run)
    pulled, pulled_context, pulled_run, _ = pull_task_input(supernode, 1e-5, 1e-4)
    assert set(supernode.pulls) == set(supernode.objects) and supernode.confirmed
    assert min(supernode.pulls.values()) == UNAVAILABLE_PULLS + 1
    assert pulled.content["c"]["round"] == 2
    assert pulled.content["w"].to_numpy_ndarrays()[0].tolist() == list(np.arange(6.0))
    assert (pulled_context.node_id, pulled_run.run_id) == (9, 5)
