"""FedPer, FedRep, Ditto and FedProto through the round loop and the ClientApp, in process."""

import numpy as np
import pytest
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict

from stamen.algorithms.ditto import client as ditto
from stamen.algorithms.fedper import client as fedper
from stamen.algorithms.fedproto import client as fedproto
from stamen.algorithms.fedproto import messages as wire
from stamen.algorithms.fedproto.server import average_prototypes
from stamen.algorithms.local import client as local
from stamen.client.handlers import _job
from stamen.client.job import private_tensors
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.models.personal_training import ENCODER, HEAD, load_part
from stamen.models.training import evaluate
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import run_rounds
from stamen.simulations.inprocess import InProcessGrid, task_identity

# label-skewed clients with all four evaluation settings
RUN = {
    "num-server-rounds": 5,
    "csbm-nodes": 600,
    "local-epochs": 2,
    "min-clients": 2,
    "partitioner": "label-dirichlet",
    "dirichlet-alpha": 0.3,
    "missing-classes": 1,
    "unseen-node-frac": 0.2,
    "new-client": True,
}
SETTINGS = ("test_acc", "val_acc", "unseen_node_acc", "missing_class_acc", "new_client_acc")


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


class Run:
    """One in-process run: its rows, the replies and weights sent per round, the final weights, the grid."""

    def __init__(self, algorithm: str, **values) -> None:
        self.config = RunConfig.from_flower({**RUN, "algorithm": algorithm, **values})
        module = server_algorithm(algorithm)
        self.grid = InProcessGrid(self.config, 3)
        self.rows: list[dict] = []
        self.sent: dict[int, ArrayRecord] = {}
        self.replies: dict[int, list[Message]] = {}

        def on_replies(server_round: int, sent: ArrayRecord, replies: list[Message]) -> None:
            self.sent[server_round], self.replies[server_round] = sent, replies

        self.final = run_rounds(
            self.grid,
            module.make_strategy(self.config),
            self.config.num_server_rounds,
            module.AGGREGATES,
            self.config.min_clients,
            60.0,
            self.rows.append,
            on_replies=on_replies,
        )

    def state(self, partition: int):
        return self.grid.contexts[InProcessGrid.NODE_OFFSET + partition].state


@pytest.fixture(scope="module")
def fedavg():
    with task_identity():
        return Run("fedavg")


@pytest.mark.parametrize("algorithm", ["fedper", "fedrep", "ditto", "fedproto"])
def test_each_learns_and_reports_the_personalised_model_in_every_setting(algorithm):
    rows = Run(algorithm).rows
    assert [row["round"] for row in rows] == [0, 1, 2, 3, 4, 5]
    assert rows[-1]["test_acc"] > rows[0]["global_test_acc"] + 0.25
    assert all(key in row and f"global_{key}" in row for row in rows[1:] for key in SETTINGS)
    assert all(row["failed_clients"] == [] for row in rows[1:])


def test_fedper_shares_the_encoder_only_and_keeps_a_head_per_client():
    run = Run("fedper")
    for replies in run.replies.values():
        for reply in replies:
            names = list(reply.content[p.ARRAYS].keys())
            assert names and all(name.startswith(ENCODER) for name in names)
    assert list(run.final.keys()) == names  # the server's weights: the encoder alone
    heads = [private_tensors(run.state(i)[fedper.HEAD_STATE]) for i in range(3)]
    assert not torch.allclose(heads[0]["head.weight"], heads[1]["head.weight"])
    # the final aggregate is the training-node-weighted mean of the last round's encoders
    last = run.replies[RUN["num-server-rounds"]]
    weights = np.array([int(r.content[p.METRICS][p.NUM_EXAMPLES]) for r in last], dtype=float)
    for name in names:
        stacked = np.stack([r.content[p.ARRAYS][name].numpy() for r in last])
        mean = np.tensordot(weights / weights.sum(), stacked, axes=1)
        assert np.allclose(run.final[name].numpy(), mean, atol=1e-6)
    # the final evaluation is each client's head on that aggregate encoder
    correct = total = 0
    for i in range(3):
        job = _job(run.grid.contexts[InProcessGrid.NODE_OFFSET + i])
        model = job.new_model()
        load_part(model, run.final.to_torch_state_dict(), ENCODER)
        load_part(model, heads[i], HEAD)
        evaluation = evaluate(model, job.data, job.new_client)
        correct, total = correct + evaluation.test_correct, total + evaluation.num_test
    assert run.rows[-1]["global_test_acc"] == correct / total


def test_shared_encoder_algorithms_refuse_a_model_without_encoder_weights():
    for algorithm, values in (("fedper", {"model": "sgc"}), ("fedrep", {"model": "mlp", "num-layers": 1})):
        with pytest.raises(ValueError, match="has no encoder weights"):  # now at config time, before training
            server_algorithm(algorithm).make_strategy(RunConfig.from_flower({"algorithm": algorithm, **values}))


def test_fedrep_differs_from_fedper():
    rows_rep, rows_per = Run("fedrep").rows, Run("fedper").rows
    assert [row["test_acc"] for row in rows_rep[1:]] != [row["test_acc"] for row in rows_per[1:]]


def test_ditto_reports_the_global_model_as_global(fedavg):
    rows = Run("ditto").rows
    # the global model is FedAvg's, step for step: the personal model never feeds back
    assert [row.get("global_test_acc") for row in rows] == [row.get("global_test_acc") for row in fedavg.rows]
    assert [row["test_acc"] for row in rows[1:]] != [row["test_acc"] for row in fedavg.rows[1:]]


def test_ditto_with_a_huge_lambda_keeps_the_personal_model_at_the_global_one():
    run = Run("ditto", **{"ditto-lambda": 1e9, "ditto-personal-epochs": 2})
    last = RUN["num-server-rounds"]
    sent = run.sent[last].to_torch_state_dict()
    for i in range(3):
        personal = private_tensors(run.state(i)[ditto.PERSONAL])
        assert all(torch.allclose(personal[k], sent[k], atol=1e-5) for k in sent)
    # so the personal figures of round r are those of the global model the clients received in round r
    for key in SETTINGS:
        assert [row[key] for row in run.rows[1:]] == [row[f"global_{key}"] for row in run.rows[:-1]]


def test_ditto_without_lambda_is_local_training():
    values = {"ditto-lambda": 0.0, "ditto-personal-epochs": RUN["local-epochs"]}
    run, alone = Run("ditto", **values), Run("local")
    for key in SETTINGS:
        assert [row[key] for row in run.rows[1:]] == [row[key] for row in alone.rows]
    for i in range(3):
        personal = private_tensors(run.state(i)[ditto.PERSONAL])
        own = private_tensors(alone.state(i)[local.STATE_KEY])
        assert all(torch.equal(personal[k], own[k]) for k in own)


def _upload(prototypes: np.ndarray, counts: list[int], node: int = 1) -> Message:
    record = ArrayRecord(
        {wire.PROTOTYPES: Array(prototypes.astype(np.float32)), wire.PROTOTYPE_COUNTS: Array(np.array(counts))}
    )
    content = RecordDict(
        {p.ARRAYS: ArrayRecord(), wire.FEDPROTO_UPLOAD: record, p.METRICS: MetricRecord({p.NUM_EXAMPLES: sum(counts)})}
    )
    return Message(content=content, dst_node_id=node, message_type=MessageType.TRAIN)


def test_fedproto_server_averages_prototypes_weighted_by_class_counts():
    strategy = server_algorithm("fedproto").make_strategy(RunConfig(algorithm="fedproto"))
    a = np.array([[1.0, 0.0], [2.0, 2.0], [0.0, 0.0]])
    b = np.array([[4.0, 3.0], [0.0, 0.0], [0.0, 0.0]])  # client b has no node of class 1 or 2
    arrays, _ = strategy.aggregate_train(1, [_upload(a, [1, 5, 0]), _upload(b, [2, 0, 0])])
    assert len(arrays) == 0  # no weights are averaged
    record = strategy.global_prototypes
    assert np.allclose(record[wire.PROTOTYPES].numpy(), [[3.0, 2.0], [2.0, 2.0], [0.0, 0.0]])
    assert record[wire.PROTOTYPE_COUNTS].numpy().tolist() == [3, 5, 0]
    # a malformed upload is left out, not averaged in
    odd = _upload(np.ones((4, 2)), [9, 9, 9, 9])
    strategy.aggregate_train(2, [_upload(a, [1, 5, 0]), _upload(b, [2, 0, 0]), odd])
    assert np.allclose(strategy.global_prototypes[wire.PROTOTYPES].numpy(), [[3.0, 2.0], [2.0, 2.0], [0.0, 0.0]])
    # every later message carries them
    messages = list(strategy.configure_train(3, ArrayRecord(), ConfigRecord(), InProcessGrid({}, 2)))
    assert all(m.content[wire.FEDPROTO_GLOBAL] is strategy.global_prototypes for m in messages)
    with pytest.raises(ValueError, match="do not match"):
        average_prototypes(np.ones((2, 3, 4)), np.ones((2, 4)))


def test_fedproto_sends_prototypes_and_no_weights():
    run = Run("fedproto")
    assert len(run.final) == 0
    for replies in run.replies.values():
        for reply in replies:
            assert len(reply.content[p.ARRAYS]) == 0
            upload = reply.content[wire.FEDPROTO_UPLOAD]
            assert upload[wire.PROTOTYPES].numpy().shape == (7, 64)  # csbm's classes x the GCN's hidden width
    # the clients hold their own models, which differ
    first, second = (private_tensors(run.state(i)[fedproto.PERSONAL]) for i in (0, 1))
    assert not torch.allclose(first["head.weight"], second["head.weight"])


def test_fedproto_embeddings_do_not_collapse_onto_the_prototypes():
    """The distance term at its default weight does not drag accuracy down as rounds go on (summed over
    the coordinates instead of averaged, it did: embeddings collapsed onto their shrinking mean)."""
    rows = Run("fedproto", **{"num-server-rounds": 12}).rows
    accuracies = [row["test_acc"] for row in rows[1:]]
    assert accuracies[-1] >= max(accuracies) - 0.05
