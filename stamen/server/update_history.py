"""Recording the clients' updates while a run trains, for FedEraser to replay them when it forgets.

:func:`history_recorder` is the round loop's ``on_replies`` hook (:func:`stamen.server.loop.run_rounds`) that the
driver (:mod:`stamen.server.driver`) installs when a run keeps a history; the replay is
:mod:`stamen.server.unlearning.federaser`'s.
"""

from __future__ import annotations

from collections.abc import Callable

from flwr.app import ArrayRecord, Message

from stamen.contract import protocol as p


def history_recorder(history) -> Callable[[int, ArrayRecord, list[Message]], None]:
    """The ``on_replies`` hook of :func:`stamen.server.loop.run_rounds` that records every client's update
    (its trained weights minus the weights sent) into ``history`` (an ``UpdateHistory``), by partition id."""

    def record(server_round: int, sent: ArrayRecord, replies: list[Message]) -> None:
        start = sent.to_torch_state_dict()
        states = {
            int(reply.content[p.METRICS][p.PARTITION_ID]): reply.content[p.ARRAYS].to_torch_state_dict()
            for reply in replies
        }
        history.record(server_round, start, states)

    return record
