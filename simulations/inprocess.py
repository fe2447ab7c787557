"""The Flower app's own round loop, strategies and ClientApp functions, run in one process.

:class:`InProcessGrid` stands in for Flower's grid: it hands every message to the
ClientApp's handler (``client.app.train``, ``evaluate_received``, ``query``) of the
addressed node, with that node's own persistent ``Context``, in this process. The
server side is :func:`server.loop.run_rounds` with the algorithm's real strategy. So
an in-process run executes exactly the code of a ``flwr run``, without the engine,
the processes and the serialization between them: a sweep of many runs (``stamen
bench fedlog``) fits a small machine. Real Flower runs are ``stamen run``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from flwr.app import Context, Message, MessageType, RecordDict
from flwr.supercore.task_identity import TaskIdentity

import client.app as client_app
from models.run_config import RunConfig
from server.algorithms import server_algorithm
from server.loop import Row, run_rounds

HANDLERS = {
    MessageType.TRAIN: client_app.train,
    MessageType.EVALUATE: client_app.evaluate_received,
    MessageType.QUERY: client_app.query,
}


class InProcessGrid:
    """A grid of ``num_nodes`` nodes (ids ``0..num_nodes-1`` = partition ids) served in this process."""

    def __init__(self, run_config: dict, num_nodes: int) -> None:
        self.contexts = {
            node: Context(0, node, {"partition-id": node, "num-partitions": num_nodes}, RecordDict(), run_config)
            for node in range(num_nodes)
        }
        self._sent = 0

    def get_node_ids(self) -> list[int]:
        return list(self.contexts)

    def send_and_receive(self, messages, *, timeout: float | None = None) -> list[Message]:
        replies = []
        for message in messages:
            self._sent += 1  # a reply needs the id the SuperLink would have given the message
            message.metadata.__dict__["_message_id"] = message.metadata.message_id or f"in-process-{self._sent}"
            handler = HANDLERS[message.metadata.message_type]
            replies.append(handler(message, self.contexts[message.metadata.dst_node_id]))
        return replies


@contextlib.contextmanager
def task_identity() -> Iterator[None]:
    """Flower stamps every message with the running task's identity; this process plays the run."""
    saved = (TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id)
    TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = 0, 0, 0
    try:
        yield
    finally:
        TaskIdentity._run_id, TaskIdentity._node_id, TaskIdentity._task_id = saved


def run_in_process(config: RunConfig, num_clients: int, on_row: Callable[[Row], None]) -> None:
    """``config``'s federated run over ``num_clients`` in-process clients; rows go to ``on_row``."""
    algorithm = server_algorithm(config.algorithm)
    with task_identity():
        run_rounds(
            InProcessGrid(config.to_flower(), num_clients),
            algorithm.make_strategy(config),
            config.num_server_rounds,
            aggregates=algorithm.AGGREGATES,
            min_clients=min(config.min_clients, num_clients),
            timeout=config.round_timeout,
            on_row=on_row,
        )
