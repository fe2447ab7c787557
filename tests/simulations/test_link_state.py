"""stamen/simulations/flower_internals/link_state.py: the simulation's link state, its messages indexed by node.

The patched state hands every node the same messages as Flower's own (same order, same
limit, each once, none expired), checked side by side on one random sequence of pushes,
questions, deletions and expiries; and a node's question checks that node's messages only
(Flower's checks every message held: the ``n * m`` a tick at 1,000 clients). The patch
goes on a subclass here, so Flower's class stays as it is for the comparison.
"""

from __future__ import annotations

import random
import secrets
import sys

import pytest
from flwr.app import Message, RecordDict
from flwr.common.constant import HEARTBEAT_INTERVAL_INF, NOOP_ACCOUNT_NAME, NOOP_FLWR_AID, SUPERLINK_NODE_ID
from flwr.proto.task_pb2 import Task  # pylint: disable=no-name-in-module
from flwr.server.superlink.linkstate.in_memory_linkstate import InMemoryLinkState, RunRecord
from flwr.supercore.constant import NOOP_FEDERATION_ID
from flwr.supercore.object_store import ObjectStoreFactory
from flwr.supercore.run import Run
from flwr.superlink.federation import NoOpFederationManager

from stamen.simulations.flower_internals.link_state import FLOWER_METHODS, index_messages_by_node
from stamen.simulations.flower_internals.task_identity import running_as_task

RUN_ID, TASK_ID = 7, 11


class FlowerLinkState(InMemoryLinkState):
    """Flower's in-memory link state as Flower wrote it (whether or not this process patched Flower's class)."""


for _name, _method in FLOWER_METHODS.items():
    setattr(FlowerLinkState, _name, _method)


class IndexedLinkState(FlowerLinkState):
    """Flower's in-memory link state with Stamen's patch."""


index_messages_by_node(IndexedLinkState)


def _state(cls: type, nodes: int) -> tuple[InMemoryLinkState, list[int]]:
    """A link state set up as Flower's simulation sets up its own: one run, ``nodes`` registered nodes."""
    state = cls(NoOpFederationManager(), ObjectStoreFactory().store())
    run = Run.create_empty(RUN_ID)
    run.primary_task_id, run.federation_id = TASK_ID, NOOP_FEDERATION_ID
    state.run_ids[RUN_ID] = RunRecord(run=run)
    state.task_store[TASK_ID] = Task(task_id=TASK_ID, run_id=RUN_ID)
    ids = []
    for _ in range(nodes):
        node = state.create_node(NOOP_FLWR_AID, NOOP_ACCOUNT_NAME, secrets.token_bytes(32), HEARTBEAT_INTERVAL_INF)
        state.acknowledge_node_heartbeat(node_id=node, heartbeat_interval=HEARTBEAT_INTERVAL_INF)
        ids.append(node)
    return state, ids


def _push(state: InMemoryLinkState, node: int, message_id: str) -> str:
    with running_as_task(run_id=RUN_ID, node_id=SUPERLINK_NODE_ID, task_id=TASK_ID):
        message = Message(RecordDict(), dst_node_id=node, message_type="train")
    message.metadata.__dict__["_message_id"] = message_id
    stored = state.store_message_ins(message)
    assert stored == message_id
    return message_id


def _expire(state: InMemoryLinkState, message_id: str) -> None:
    metadata = state.message_ins_store[message_id].metadata
    metadata.__dict__["_created_at"] = metadata.created_at - metadata.ttl - 1.0


def test_every_node_gets_what_flowers_own_state_gives_it():
    rng = random.Random(0)
    flower, flower_nodes = _state(FlowerLinkState, 12)
    indexed, indexed_nodes = _state(IndexedLinkState, 12)
    assert len(set(flower_nodes)) == 12
    by_position: list[str] = []
    answers = 0
    for step in range(600):
        action = rng.random()
        if action < 0.4:  # the ServerApp pushes a message to some node
            position = rng.randrange(12)
            message_id = f"m{step}"
            _push(flower, flower_nodes[position], message_id)
            _push(indexed, indexed_nodes[position], message_id)
            by_position.append(message_id)
        elif action < 0.85:  # a node asks for its messages (one, or all)
            position, limit = rng.randrange(12), rng.choice([1, 1, 2, None])
            got = [m.metadata.message_id for m in flower.get_message_ins(flower_nodes[position], limit)]
            want = [m.metadata.message_id for m in indexed.get_message_ins(indexed_nodes[position], limit)]
            assert want == got, step
            answers += bool(got)
        elif action < 0.93 and by_position:  # the ServerApp deletes one (its reply pulled)
            message_id = rng.choice(by_position)
            flower.delete_messages({message_id})
            indexed.delete_messages({message_id})
        elif by_position:  # one expires
            message_id = rng.choice(by_position)
            if message_id in flower.message_ins_store:
                _expire(flower, message_id)
                _expire(indexed, message_id)
    assert answers > 100  # the sequence exercised deliveries, not only empty answers
    # both states delivered the same messages and hold the same ones
    for flower_node, indexed_node in zip(flower_nodes, indexed_nodes):
        assert [m.metadata.message_id for m in flower.get_message_ins(flower_node, None)] == [
            m.metadata.message_id for m in indexed.get_message_ins(indexed_node, None)
        ]
    # what Flower's state still holds, the indexed one holds too (it may hold more: a delivered
    # message that expired stays until its reply is pulled, where Flower's drops it at any question)
    assert set(flower.message_ins_store) <= set(indexed.message_ins_store)


@pytest.mark.parametrize(("cls", "checks"), [(FlowerLinkState, 201), (IndexedLinkState, 1)])
def test_a_nodes_question_checks_only_its_own_messages(cls, checks):
    state, nodes = _state(cls, 101)
    for other in nodes[1:]:
        _push(state, other, secrets.token_hex(8))
        _push(state, other, secrets.token_hex(8))
    asked = _push(state, nodes[0], "mine")
    calls = []
    check = state._check_stored_messages
    state._check_stored_messages = lambda ids, run_id=None: (calls.append(set(ids)), check(ids, run_id))[1]
    assert [m.metadata.message_id for m in state.get_message_ins(nodes[0], limit=1)] == [asked]
    assert len(calls) == checks  # Flower's: every message held; indexed: the node's own
    assert state.get_message_ins(nodes[0], limit=1) == []
    assert state.message_ins_store[asked].metadata.delivered_at != ""


def test_an_expired_message_is_deleted_not_delivered():
    state, (node,) = _state(IndexedLinkState, 1)
    _push(state, node, "old")
    _push(state, node, "new")
    _expire(state, "old")
    assert [m.metadata.message_id for m in state.get_message_ins(node, limit=None)] == ["new"]
    assert "old" not in state.message_ins_store


def test_a_local_simulation_starts_flowers_simulation_through_the_shim_patched_first(tmp_path, monkeypatch):
    import flwr.simulation.app

    from stamen.simulations.flower import simulation_shim
    from stamen.simulations.flower_internals import link_state

    folder = simulation_shim(tmp_path)
    shim = folder / "flwr-simulation"
    assert shim.stat().st_mode & 0o777 == 0o700 and list(folder.iterdir()) == [shim]  # no partial file left
    text = shim.read_text()
    assert text.startswith(f"#!{sys.executable}\n")
    assert "from stamen.simulations.flower_internals.link_state import flwr_simulation" in text
    # the shim's function patches Flower's state, then runs Flower's own command
    seen = []
    patched = InMemoryLinkState.__dict__.get
    monkeypatch.setattr(flwr.simulation.app, "flwr_simulation", lambda: seen.append(patched("_stamen_indexed_by_node")))
    link_state.flwr_simulation()
    assert seen == [True]
