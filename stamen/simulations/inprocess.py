"""A Flower grid whose nodes are the ClientApp called in-process: no engine, no network.

The round loop, the strategies and the ClientApp (with its mods) run exactly as under
``flwr run``; only the transport is a function call. Tests and in-process benchmarks
use it on machines too small for a Ray simulation per measurement.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Iterator

from flwr.app import Context, Error, Message, RecordDict

from stamen.client.app import app as client_app
from stamen.contract.figures import Row
from stamen.contract.run_config import RunConfig
from stamen.server.driver import build_driver
from stamen.simulations.flower_internals.task_identity import running_as_task
from stamen.simulations.relay import plain_flower_console


class InProcessGrid:
    """``num_nodes`` nodes, each with its own persistent ``context.state``.

    Node ids differ from partition ids, as in a deployment: partition ``i`` lives on node
    ``100 + i``. With ``together`` (the default) the clients of a training round that run
    FedAvg's local training train as one batch (:mod:`stamen.client.together`: the same replies to
    the bit); without, each message goes to the ClientApp in turn.

    Nodes of the partitions in ``failing`` answer every message with an error sent from the
    SuperLink's own node id (1), as Flower reports a lost SuperNode; those in ``silent`` never
    answer (dead or unreachable).
    """

    NODE_OFFSET = 100

    def __init__(
        self,
        run_config: RunConfig | dict,
        num_nodes: int,
        failing: Iterable[int] = (),
        silent: Iterable[int] = (),
        together: bool = True,
    ) -> None:
        plain_flower_console()  # the ServerApp and ClientApp log here: colour codes only onto a terminal
        if isinstance(run_config, RunConfig):  # the nodes' contexts hold Flower's form, as on every transport
            run_config = run_config.to_flower()
        self.contexts = {
            self.NODE_OFFSET + i: Context(
                0, self.NODE_OFFSET + i, {"partition-id": i, "num-partitions": num_nodes}, RecordDict(), run_config
            )
            for i in range(num_nodes)
        }
        self.failing = {self.NODE_OFFSET + i for i in failing}
        self.silent = {self.NODE_OFFSET + i for i in silent}  # may change mid-run, as nodes die
        self.together = together

    def get_node_ids(self) -> list[int]:
        return list(self.contexts)

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> list[Message]:
        replies: list[Message | None] = []
        answered: list[tuple[int, Message]] = []
        for message in messages:
            message = _delivered(message)
            node = message.metadata.dst_node_id
            if node in self.silent:
                continue
            if node in self.failing:
                reply = Message(error=Error(code=0, reason="node lost"), reply_to=message)
                reply.metadata.__dict__["_src_node_id"] = 1
                replies.append(reply)
            else:
                answered.append((len(replies), message))
                replies.append(None)
        sent = [message for _, message in answered]
        contexts = [self.contexts[message.metadata.dst_node_id] for message in sent]
        if self.together:
            from stamen.client.together import answer_together  # torch and PyG: loaded with the first round

            answers = answer_together(sent, contexts, client_app)
        else:
            answers = [client_app(message, context) for message, context in zip(sent, contexts)]
        for (position, _), answer in zip(answered, answers):
            replies[position] = answer
        return replies  # type: ignore[return-value]


def _delivered(message: Message) -> Message:
    """Give the message the id a SuperLink would have stamped on it."""
    message.metadata.__dict__["_message_id"] = message.metadata.message_id or f"m{id(message)}"
    return message


@contextlib.contextmanager
def flower_log_level(level: int) -> Iterator[None]:
    """Flower's logger at ``level`` inside the block (an in-process experiment runs many rounds)."""
    logger = logging.getLogger("flwr")
    saved = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(saved)


@contextlib.contextmanager
def task_identity() -> Iterator[None]:
    """Flower stamps messages with the running task's identity; give this process one meanwhile (run, node and
    task 1; the identity it had before comes back after the block)."""
    with running_as_task(run_id=1, node_id=1, task_id=1):
        yield


def run_in_process(
    config: RunConfig, num_clients: int, on_row: Callable[[Row], None], together: bool = True
) -> InProcessGrid:
    """``config``'s federated run over ``num_clients`` in-process clients; rows go to ``on_row``. Returns
    the grid (its nodes' contexts); ``together``: see :class:`InProcessGrid`."""
    grid = InProcessGrid(config, num_clients, together=together)
    with task_identity():
        build_driver(config, grid, clients=num_clients).run(on_row)
    return grid
