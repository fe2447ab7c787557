"""Who takes part in unlearning: the roll call, the clients missing, and the grid restricted to some.

The roll call is the evaluation of the trained model (a ``unlearn-evaluate`` query to
every node): its replies are the original model's figures, and who answers decides
whether a method that needs the holders of the forgotten data can run. A holder is the
requesting client of a ``client:``/``nodes:`` request, and every client for a ``class:``
request (the server cannot know who holds the class).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from logging import WARNING

from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, RecordDict
from flwr.common import log
from flwr.serverapp import Grid

from stamen.contract import protocol as p
from stamen.contract.requests import Request
from stamen.server.transport import send_and_receive


class SubGrid:
    """The grid restricted to some nodes: what the strategy samples from in unlearning's rounds."""

    def __init__(self, grid: Grid, node_ids: Iterable[int]) -> None:
        self.grid, self.node_ids = grid, list(node_ids)

    def get_node_ids(self) -> list[int]:
        return list(self.node_ids)

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        return send_and_receive(self.grid, messages, timeout)


def query(
    kind: str, request: Request, arrays: ArrayRecord, node_ids: Iterable[int], extra: RecordDict | None = None
) -> list[Message]:
    """One unlearning query per node: the weights, the query's kind and the request (and ``extra`` records)."""
    messages = []
    for node_id in node_ids:
        config = ConfigRecord({p.QUERY: kind, p.UNLEARN_REQUEST: str(request)})
        content = RecordDict({p.ARRAYS: arrays, p.CONFIG: config})
        for name, record in (extra or {}).items():
            content[name] = record
        messages.append(Message(content=content, dst_node_id=node_id, message_type=MessageType.QUERY))
    return messages


@dataclass
class RollCall:
    """Who answered the roll call.

    Attributes:
        partitions: node id -> partition id of every client that answered.
        counts: partition id -> the client's evaluation counts of the trained model.
        missing: partitions that hold data to forget and did not answer.
    """

    partitions: dict[int, int]
    counts: dict[int, dict[str, int]]
    missing: list[int]


def holders_missing(request: Request, partitions: dict[int, int], num_partitions: int) -> list[int]:
    """Partitions that hold data to forget but did not answer (``partitions``: node id -> partition)."""
    answered = set(partitions.values())
    return [i for i in request.holders(num_partitions) if i not in answered]


def roll_call(grid: Grid, request: Request, arrays: ArrayRecord, timeout: float) -> RollCall:
    """Evaluate ``arrays`` on every node; who answers takes part (RuntimeError if nobody does)."""
    node_ids = list(grid.get_node_ids())
    replies = send_and_receive(grid, query(p.UNLEARN_EVALUATE_QUERY, request, arrays, node_ids), timeout)
    valid = [r for r in replies if not r.has_error()]
    for reply in replies:
        if reply.has_error():
            log(WARNING, "unlearning: node %s did not answer: %s", reply.metadata.src_node_id, reply.error.reason)
    if not valid:
        reasons = sorted({r.error.reason for r in replies}) or ["no reply"]
        raise RuntimeError(f"unlearning: no client answered the roll call ({'; '.join(reasons)})")
    partitions = {r.metadata.src_node_id: int(r.content[p.METRICS][p.PARTITION_ID]) for r in valid}
    counts = {int(r.content[p.METRICS][p.PARTITION_ID]): dict(r.content[p.METRICS]) for r in valid}
    return RollCall(partitions, counts, holders_missing(request, partitions, len(node_ids)))
