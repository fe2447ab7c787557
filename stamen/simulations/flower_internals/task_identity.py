"""The identity of the task this process runs, which Flower stamps on every message it makes.

Replaces: ``flwr.supercore.task_identity.TaskIdentity`` (not public API).

Flower 1.42's ``Message(...)`` fills a new message's metadata from ``TaskIdentity`` (the run,
node and task IDs of the task running in this process) and raises when it is not set.
Flower's own processes set it when their task starts (``flwr-clientapp``, the ServerApp's
runtime). A process that makes messages outside those must set it too: the in-process
engine (and the tests that build messages), and the resident ClientApp, which serves a
task itself. Flower offers no public way; this module sets it through ``TaskIdentity``'s
own properties (never its private fields).

Dropping it: once Flower stamps messages without a task identity, or offers a public way
to set one, call that here (or nothing) and keep the two functions' signatures.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from flwr.supercore.task_identity import TaskIdentity

_FIELDS = ("run_id", "node_id", "task_id")


def set_task_identity(*, run_id: int, node_id: int, task_id: int) -> None:
    """Make this process the task ``task_id`` of ``run_id`` on ``node_id`` (as ``flwr-clientapp`` does for its task)."""
    TaskIdentity.run_id = run_id
    TaskIdentity.node_id = node_id
    TaskIdentity.task_id = task_id


def _current(field: str) -> int | None:
    try:
        return getattr(TaskIdentity, field)
    except RuntimeError:  # Flower's "not set"
        return None


@contextlib.contextmanager
def running_as_task(*, run_id: int = 1, node_id: int = 1, task_id: int = 1) -> Iterator[None]:
    """This process is that task inside the block; the identity it had before (or none) comes back after it."""
    saved = {field: _current(field) for field in _FIELDS}
    set_task_identity(run_id=run_id, node_id=node_id, task_id=task_id)
    try:
        yield
    finally:
        for field, value in saved.items():
            setattr(TaskIdentity, field, value)
