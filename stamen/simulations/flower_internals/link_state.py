"""The simulation's in-memory link state, with each node's undelivered messages indexed by node.

Replaces: ``flwr.server.superlink.linkstate.in_memory_linkstate.InMemoryLinkState``'s
``get_message_ins`` (patched in place, with ``store_message_ins`` and ``delete_messages``
keeping the index), reads the clock through ``flwr.supercore.date`` as that class does, and
runs ``flwr.simulation.app``'s ``flwr_simulation`` (the ``flwr-simulation`` command) after
patching; none is public API.

Flower 1.42's simulation feeds its Ray actors from a thread that, every 0.1 s, asks the
link state for one message per node (``vce_api.add_messages_to_queue``), and the link
state answers each question by checking every message it holds (``_check_stored_messages``
per message: the clock, the run's federation, under the state's lock): with ``n`` nodes and
``m`` messages held, ``n * m`` checks a tick. At 1,000 clients that thread alone kept a core
busy and, holding the GIL, made every other thread of the simulation process (those that
hand messages to the actors and store their replies, and the ServerApp's) wait for it
(benchmarks/scale-1000-clients.md). With the index a question costs the checks of that
node's own undelivered messages, ``m`` checks a tick in all.

What a node receives is unchanged: its undelivered messages of the run, each checked
(expired, or its nodes out of the federation: deleted, not delivered) before it is handed
out, in the order they were stored, ``limit`` at most. One difference: Flower's loop also
checks (and deletes, when invalid) the *other* nodes' messages on the way; here those are
checked when their own node asks, or when the ServerApp pulls their replies
(``get_message_res`` checks the messages it is asked about), as Flower does for them anyway.

How it gets there: Flower's SuperExec starts the simulation process as ``flwr-simulation``,
found on its ``PATH``; a local simulation's SuperLink (:class:`stamen.simulations.flower.LocalSuperLink`)
puts a shim of that name first on the ``PATH`` it runs with, which calls :func:`flwr_simulation`:
this patch, then Flower's own ``flwr-simulation``. The app itself (``stamen.server.app``, public Flower
API only) is unchanged, and a deployment, which has no simulation process, is not touched.

Dropping it: once Flower's in-memory state looks up a node's messages without a scan of every
message (or its simulation asks once per tick for every node), remove this module and the shim
(``SIMULATION_SHIM`` in :mod:`stamen.simulations.flower`).
"""

from __future__ import annotations

from typing import Any

from flwr.server.superlink.linkstate.in_memory_linkstate import InMemoryLinkState
from flwr.supercore.date import now

FLOWER_METHODS = {
    name: InMemoryLinkState.__dict__[name] for name in ("store_message_ins", "delete_messages", "get_message_ins")
}  # Flower's own, as imported (the tests compare the patched state with them)
_INDEX = "_stamen_undelivered_by_node"  # node id -> {message id: None}, in the order stored
_PATCHED = "_stamen_indexed_by_node"


def _index(state: Any) -> dict[int, dict[str, None]]:
    index = state.__dict__.get(_INDEX)
    if index is None:  # messages stored before the state was patched: index them once
        index = {}
        for message_id, message in state.message_ins_store.items():
            if message.metadata.delivered_at == "":
                index.setdefault(message.metadata.dst_node_id, {})[message_id] = None
        state.__dict__[_INDEX] = index
    return index


def index_messages_by_node(cls: type = InMemoryLinkState) -> None:
    """Patch ``cls`` (Flower's :class:`InMemoryLinkState`, or a subclass of it; once) so that
    ``get_message_ins`` reads an index by node, which ``store_message_ins`` and ``delete_messages`` keep."""
    if cls.__dict__.get(_PATCHED, False):
        return
    store_original = cls.store_message_ins
    delete_original = cls.delete_messages

    def store_message_ins(self: Any, message: Any) -> str | None:
        with self.lock:
            message_id = store_original(self, message)
            if message_id is not None and message_id in self.message_ins_store:
                _index(self).setdefault(message.metadata.dst_node_id, {})[message_id] = None
            return message_id

    def delete_messages(self: Any, message_ins_ids: set[str]) -> None:
        with self.lock:
            index = _index(self)
            for message_id in message_ins_ids:
                message = self.message_ins_store.get(message_id)
                if message is not None:
                    index.get(message.metadata.dst_node_id, {}).pop(message_id, None)
            delete_original(self, message_ins_ids)

    def get_message_ins(self: Any, node_id: int, limit: int | None, *, run_id: int | None = None) -> list[Any]:
        if limit is not None and limit < 1:
            raise AssertionError("`limit` must be >= 1")
        found: list[Any] = []
        with self.lock:
            pending = _index(self).get(node_id)
            for message_id in list(pending) if pending else ():
                self._check_stored_messages({message_id})  # deletes it (and unindexes it) when invalid
                message = self.message_ins_store.get(message_id)
                if message is None or message.metadata.delivered_at != "":
                    pending.pop(message_id, None)
                    continue
                if run_id is not None and message.metadata.run_id != run_id:
                    continue
                found.append(message)
                pending.pop(message_id, None)
                if limit and len(found) == limit:
                    break
            if found:
                delivered_at = now().isoformat()
                for message in found:
                    message.metadata.delivered_at = delivered_at
        return found

    cls.store_message_ins = store_message_ins
    cls.delete_messages = delete_messages
    cls.get_message_ins = get_message_ins
    setattr(cls, _PATCHED, True)


def flwr_simulation() -> None:
    """Flower's ``flwr-simulation`` command, with this process's link state indexed by node first."""
    from flwr.simulation.app import flwr_simulation as flowers  # Ray and the simulation: here only

    index_messages_by_node()
    flowers()
