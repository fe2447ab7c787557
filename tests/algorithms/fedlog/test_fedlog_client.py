"""FedLoG through the ClientApp and the strategy, in process: what travels, and what never does."""

import numpy as np
import pytest
import torch
from flwr.app import ArrayRecord, Message

from stamen.algorithms.fedlog import messages as wire
from stamen.client.job import client_data, private_tensors
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import run_rounds
from stamen.simulations.inprocess import InProcessGrid, task_identity

RUN = {
    "algorithm": "fedlog",
    "num-server-rounds": 3,
    "csbm-nodes": 400,
    "csbm-features": 16,
    "missing-classes": 1,
    "unseen-node-frac": 0.2,
    "new-client": True,
    "fedlog-num-proto": 4,
    "fedlog-warmup-epochs": 3,
    "fedlog-generator-epochs": 3,
    "fedlog-hidden": 16,
    "fedlog-embedding": 8,
    "fedlog-generator-hidden": 16,
}


class RecordingGrid(InProcessGrid):
    """Keeps every message in both directions."""

    def __init__(self, *args):
        super().__init__(*args)
        self.sent: list[Message] = []
        self.replies: list[Message] = []

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        replies = super().send_and_receive(messages, timeout=timeout)
        self.sent += messages
        self.replies += replies
        return replies


@pytest.fixture(scope="module")
def recorded():
    config = RunConfig.from_flower(RUN)
    grid = RecordingGrid(config.to_flower(), 3)
    rows = []
    module = server_algorithm("fedlog")
    with task_identity():
        run_rounds(grid, module.make_strategy(config), 3, True, 2, 60.0, rows.append)
    return config, grid, rows


def _arrays(message: Message) -> dict[str, np.ndarray]:
    return {
        f"{name}/{key}": record[key].numpy()
        for name, record in message.content.items()
        if isinstance(record, ArrayRecord)
        for key in record
    }


def test_no_real_node_feature_or_label_is_uploaded(recorded):
    config, grid, _ = recorded
    spec = config.federation(3)
    clients = [client_data(spec, i, torch.device("cpu")) for i in range(3)]
    features = torch.cat([c.x for c in clients]).numpy()
    labels = [c.y.numpy() for c in clients]
    uploads = [reply for reply in grid.replies if len(reply.content[p.ARRAYS]) > 0]
    assert uploads
    for reply in uploads:
        assert set(reply.content.array_records) <= {p.ARRAYS, wire.FEDLOG_UPLOAD, wire.FEDLOG_GENERATOR}
        assert set(reply.content[wire.FEDLOG_UPLOAD]) == {wire.SYNTHETIC_HEAD, wire.CLASS_PROPORTIONS}
        assert not any(key.startswith("synthetic") for key in reply.content[p.ARRAYS])
        for name, array in _arrays(reply).items():
            if array.ndim >= 1 and array.shape[-1] == features.shape[1]:
                rows = array.reshape(-1, features.shape[1])
                distances = ((rows[:, None, :] - features[None, :, :]) ** 2).sum(-1)
                assert distances.min() > 1e-6, f"{name} holds a real node's features"
            for y in labels:
                assert array.shape != y.shape or not np.array_equal(array, y), f"{name} holds real labels"
    first_round = [r for r in uploads if wire.FEDLOG_GENERATOR in r.content]
    assert len(first_round) == 3, "every client uploads its generator once"


def test_the_server_sends_condensed_nodes_and_per_class_generators(recorded):
    config, grid, rows = recorded
    later = [m for m in grid.sent if wire.FEDLOG_GLOBAL in m.content]
    assert later, "no global synthetic data was sent after the first round"
    synthetic = later[0].content[wire.FEDLOG_GLOBAL]
    num_classes = config.csbm_classes
    assert synthetic[wire.GLOBAL_FEATURES].numpy().shape == (num_classes * 4, 16)
    assert synthetic[wire.GLOBAL_LABELS].numpy().tolist() == np.repeat(np.arange(num_classes), 4).tolist()
    generators = later[0].content[wire.FEDLOG_GENERATORS]
    assert {key.split(".", 1)[0] for key in generators} == {str(c) for c in range(num_classes)}
    assert {"missing_class_acc", "global_missing_class_acc", "unseen_node_acc", "new_client_acc"} <= set(rows[-1])
    for row in rows:
        assert all(0.0 <= v <= 1.0 for k, v in row.items() if k.endswith("_acc"))


def test_generators_travel_once_per_version_and_stay_in_the_client_state(recorded):
    _, grid, _ = recorded
    carrying = [m for m in grid.sent if wire.FEDLOG_GENERATORS in m.content]
    assert sorted(m.metadata.dst_node_id for m in carrying) == sorted(grid.contexts), "each node once, in round 2"
    later = [m for m in grid.sent if wire.FEDLOG_GLOBAL in m.content and wire.FEDLOG_GENERATORS not in m.content]
    assert len(later) == 3 + 3, "round 3's training and the final evaluation carry the synthetic nodes only"
    for context in grid.contexts.values():
        assert wire.FEDLOG_GENERATORS in context.state


class LosesFirstGenerators(RecordingGrid):
    """Node 102 fails on the first message that carries generators to it."""

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        lost = [m for m in messages if m.metadata.dst_node_id == 102 and wire.FEDLOG_GENERATORS in m.content]
        self.failing = {102} if lost and not self.sent_to_lost else set()
        self.sent_to_lost = self.sent_to_lost or bool(lost)
        return super().send_and_receive(messages, timeout=timeout)


def test_a_node_that_missed_the_generators_gets_them_again():
    config = RunConfig.from_flower(RUN)
    grid = LosesFirstGenerators(config.to_flower(), 3)
    grid.sent_to_lost = False
    with task_identity():
        run_rounds(grid, server_algorithm("fedlog").make_strategy(config), 3, True, 2, 60.0, lambda row: None)
    carrying = [m.metadata.dst_node_id for m in grid.sent if wire.FEDLOG_GENERATORS in m.content]
    assert sorted(carrying) == [100, 101, 102, 102], "sent again to the node whose reply was lost"


def test_lambda_and_synthetic_nodes_persist_in_the_client_state(recorded):
    _, grid, _ = recorded
    for context in grid.contexts.values():
        personal = private_tensors(context.state["fedlog-personal"])
        assert set(personal) == {"synthetic_head", "synthetic_tail", "lambda"}
        assert personal["lambda"].shape == (7,) and ((personal["lambda"] >= 0) & (personal["lambda"] <= 1)).all()
