"""The round loop and the ClientApp together, through a grid that calls clients in-process."""

import json

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, Error, Message, MessageType, MetricRecord, RecordDict
from flwr.common.constant import ErrorCode

from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.server import outputs
from stamen.server.algorithms import server_algorithm
from stamen.server.certification import certify_federation
from stamen.server.checkpoint import load_checkpoint, save_checkpoint
from stamen.server.loop import FailureCategory, RunHealth, TooFewClientsError, run_rounds
from stamen.server.rows import pooled_accuracies
from stamen.simulations.inprocess import InProcessGrid, task_identity


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


RUN = {"num-server-rounds": 4, "csbm-nodes": 600, "local-epochs": 3, "min-clients": 2}


def _rows(algorithm: str, failing=frozenset(), silent=frozenset(), **kwargs):
    config = RunConfig.from_flower({**RUN, "algorithm": algorithm, **kwargs.pop("run", {})})
    rows = []
    module = server_algorithm(algorithm)
    run_rounds(
        kwargs.pop("grid", None) or InProcessGrid(config, 3, failing, silent),
        module.make_strategy(config),
        config.num_server_rounds,
        module.AGGREGATES,
        config.min_clients,
        60.0,
        rows.append,
        **kwargs,
    )
    return rows


def test_fedavg_rounds_produce_ordered_rows_and_learn():
    rows = _rows("fedavg")
    assert [row["round"] for row in rows] == [0, 1, 2, 3, 4]
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"] + 0.15
    assert all(row["clients"] == 3 for row in rows[1:])


def test_local_baseline_has_no_global_model():
    rows = _rows("local")
    assert [row["round"] for row in rows] == [1, 2, 3, 4]
    assert all("global_test_acc" not in row for row in rows)
    assert rows[-1]["test_acc"] > rows[0]["test_acc"]


def test_a_lost_client_is_tolerated_down_to_min_clients():
    rows = _rows("fedavg", failing={2})
    assert all(row["clients"] == 2 for row in rows[1:])
    with pytest.raises(RuntimeError, match="fewer than min-clients=2"):
        _rows("fedavg", failing={1, 2})


def test_failed_and_silent_clients_are_named_in_the_round_row():
    rows = _rows("fedavg", failing={2}, silent={0}, run={"min-clients": 1})
    for row in rows[1:]:
        failures = {f["node_id"]: f for f in row["failed_clients"]}
        assert set(failures) == {100, 102}
        assert failures[102]["reason"] == "node lost"
        assert "no reply within round-timeout=60 s" in failures[100]["reason"]
        assert failures[102]["category"] == failures[100]["category"] == "lost"  # a timeout is lost too
    with pytest.raises(RuntimeError, match=r"node 101 \(partition 1\)"):  # it replied once, then died
        grid = InProcessGrid(RunConfig.from_flower(RUN).to_flower(), 3, failing={2})
        _rows("fedavg", grid=grid, on_checkpoint=lambda checkpoint: grid.silent.add(101))


def test_resuming_from_a_checkpoint_continues_the_rounds_exactly(tmp_path):
    # Clients keep no optimizer state across runs: a resumed run is then the same computation.
    run = {"keep-optimizer-state": False}
    uninterrupted = _rows("fedavg", run=run)
    checkpoints = []
    first = _rows("fedavg", run={**run, "num-server-rounds": 2}, on_checkpoint=checkpoints.append)
    save_checkpoint(tmp_path, checkpoints[-1])
    resumed = load_checkpoint(tmp_path)
    assert resumed.round == 2 and resumed.node_partitions == {100: 0, 101: 1, 102: 2}
    rest = _rows("fedavg", run=run, resume=resumed)
    assert [row["round"] for row in first[:-1] + rest] == [0, 1, 2, 3, 4]
    for key in ("global_test_acc", "test_acc", "train_loss"):
        assert rest[-1][key] == pytest.approx(uninterrupted[-1][key], abs=1e-6), key
    assert rest[0]["global_test_acc"] == pytest.approx(uninterrupted[2]["global_test_acc"], abs=1e-6)
    # A checkpoint of the last round (a run stopped before its final evaluation): only the last row is left.
    last = _rows("fedavg", run={**run, "num-server-rounds": 2}, resume=resumed)
    assert len(last) == 1 and last[0]["round"] == 2
    for key in ("global_test_acc", "test_acc", "train_loss", "clients"):
        assert last[0][key] == first[-1][key], key
    with pytest.raises(ValueError, match="beyond num-server-rounds=1"):
        _rows("fedavg", run={**run, "num-server-rounds": 1}, resume=resumed)


class FaultyGrid(InProcessGrid):
    """An in-process grid whose clients can fail in their code or send malformed replies.

    Nodes of the partitions in ``raising`` get a training message without its round
    config, so the ClientApp raises; the grid answers as Flower's runtime does (an error
    reply from the node, code ``CLIENT_APP_RAISED_EXCEPTION``, the exception's text).
    ``tamper[partition](content)`` edits that partition's replies before the loop sees them.
    """

    def __init__(self, num_nodes: int = 3, raising=(), tamper=None, **kwargs) -> None:
        super().__init__(RunConfig.from_flower(RUN).to_flower(), num_nodes, **kwargs)
        self.raising = {self.NODE_OFFSET + i for i in raising}
        self.tamper = {self.NODE_OFFSET + i: edit for i, edit in (tamper or {}).items()}

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for message in messages:
            node = message.metadata.dst_node_id
            if node in self.raising:  # the strategy's messages share one content: replace it, do not edit it
                message.content = RecordDict({k: v for k, v in message.content.items() if k != p.CONFIG})
            try:
                replies += super().send_and_receive([message], timeout=timeout)
            except Exception as error:  # what Flower's runtime makes of a ClientApp that raised
                error = Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=f"{type(error)}:<'{error}'>")
                replies.append(Message(error, reply_to=message))
            if node in self.tamper and replies and not replies[-1].has_error():
                self.tamper[node](replies[-1].content)
        return replies


def _drop_metrics(content: RecordDict) -> None:
    del content[p.METRICS]


def _drop_num_examples(content: RecordDict) -> None:
    if p.NUM_EXAMPLES in content[p.METRICS]:  # training replies only (evaluation replies have it too)
        del content[p.METRICS][p.NUM_EXAMPLES]


def _extra_metric(content: RecordDict) -> None:
    content[p.METRICS]["surprise"] = 1.0


def _wrong_shape(content: RecordDict) -> None:
    arrays = content[p.ARRAYS]
    if len(arrays) > 0:
        arrays[next(iter(arrays))] = Array(np.zeros(3, dtype=np.float32))


def _wrong_name(content: RecordDict) -> None:
    arrays = content[p.ARRAYS]
    if len(arrays) > 0:
        first = next(iter(arrays))
        arrays["renamed"] = arrays.pop(first)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (_drop_metrics, "no 'metrics' metric record"),
        (_drop_num_examples, "no 'num-examples'"),
        (_extra_metric, "metric keys differ from most replies' in ['surprise']"),
        (_wrong_shape, "differ from"),
        (_wrong_name, "differ from"),
    ],
)
def test_a_malformed_reply_fails_that_client_only_and_the_round_aggregates_the_rest(edit, reason):
    health = RunHealth()
    rows = _rows("fedavg", grid=FaultyGrid(tamper={2: edit}), health=health)
    without = _rows("fedavg", silent={2})  # the same run with client 2 never answering
    assert [row["round"] for row in rows] == [0, 1, 2, 3, 4]
    for row in rows[1:]:
        assert row["clients"] == 2
        [failure] = row["failed_clients"]
        assert failure["node_id"] == 102 and failure["category"] == "malformed", failure
        assert reason in failure["reason"], failure["reason"]
        assert failure["partition_id"] in (None, 2)  # 2 when the reply still said so
    # The malformed replies took no part: every round's figures are those of the run without client 2
    # (the final evaluation aside, where client 2's evaluation reply may be whole).
    for row, expected in zip(rows, without, strict=True):
        for key in ("global_test_acc", "test_acc", "train_loss"):
            if key in expected and not (row is rows[-1] and key.startswith("global_")):
                assert row[key] == pytest.approx(expected[key], abs=1e-6), (row["round"], key)
    assert health.degraded and health.count(FailureCategory.MALFORMED) >= 4
    assert health.count(FailureCategory.LOST) == health.count(FailureCategory.ERROR) == 0


def test_a_malformed_evaluation_reply_is_named_in_the_last_row():
    rows = _rows("fedavg", grid=FaultyGrid(tamper={1: _drop_metrics}))
    [failure] = rows[-1]["final_eval_failed_clients"]
    assert failure["node_id"] == 101 and failure["category"] == "malformed"
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"]


def test_a_client_whose_code_raised_is_an_error_with_its_message():
    health = RunHealth()
    rows = _rows("fedavg", grid=FaultyGrid(raising={0}), health=health)
    for row in rows[1:]:
        assert row["clients"] == 2
        [failure] = row["failed_clients"]
        assert failure["node_id"] == 100 and failure["category"] == FailureCategory.ERROR.value
        assert failure["error_code"] == ErrorCode.CLIENT_APP_RAISED_EXCEPTION
        assert "KeyError" in failure["reason"] and "'config'" in failure["reason"], failure["reason"]
    assert health.degraded and health.count(FailureCategory.ERROR) == 4
    assert {failure.stage for failure in health.failures} == {"round 1", "round 2", "round 3", "round 4"}


def test_lost_clients_alone_do_not_degrade_the_run():
    health = RunHealth()
    _rows("fedavg", silent={0}, failing={2}, run={"min-clients": 1}, health=health)
    assert not health.degraded and health.count(FailureCategory.LOST) == 2 * 5  # 4 rounds, the final evaluation


def test_too_few_valid_replies_still_end_the_run():
    health = RunHealth()
    grid = FaultyGrid(raising={0}, tamper={1: _drop_metrics})
    with pytest.raises(TooFewClientsError, match=r"round 1: 1 of 3 clients .*fewer than min-clients=2") as raised:
        _rows("fedavg", grid=grid, health=health)
    assert "node 100 error" in str(raised.value) and "node 101 malformed" in str(raised.value)
    assert {(f.node_id, f.category) for f in health.failures} == {
        (100, FailureCategory.ERROR),
        (101, FailureCategory.MALFORMED),
    }


def test_every_malformed_version_is_refused_when_none_is_shared_by_most():
    # Round 1 sends no weights: the shape the replies should have is the one most share. With
    # one good and one malformed reply neither is the majority: both are refused, none guessed.
    grid = FaultyGrid(num_nodes=2, tamper={1: _wrong_shape})
    with pytest.raises(TooFewClientsError, match="0 of 2 clients replied validly"):
        _rows("fedavg", grid=grid, run={"min-clients": 1})


def _reply(weights: np.ndarray, num_examples: int) -> Message:
    content = RecordDict({p.ARRAYS: ArrayRecord([weights]), p.METRICS: MetricRecord({p.NUM_EXAMPLES: num_examples})})
    return Message(content=content, dst_node_id=1, message_type=MessageType.TRAIN)


def test_fedavg_weights_clients_by_training_nodes():
    strategy = server_algorithm("fedavg").make_strategy(RunConfig())
    replies = [_reply(np.array([1.0, 0.0]), 1), _reply(np.array([4.0, 3.0]), 2)]
    arrays, _ = strategy.aggregate_train(1, replies)
    assert np.allclose(arrays.to_numpy_ndarrays()[0], [3.0, 2.0])


def test_pooled_accuracy_weights_clients_by_size():
    metrics = [
        MetricRecord({p.NUM_VAL: 10, p.NUM_TEST: 10, p.GLOBAL_VAL_CORRECT: 10, p.GLOBAL_TEST_CORRECT: 5}),
        MetricRecord({p.NUM_VAL: 30, p.NUM_TEST: 90, p.GLOBAL_VAL_CORRECT: 0, p.GLOBAL_TEST_CORRECT: 45}),
    ]
    pooled = pooled_accuracies(metrics)
    assert pooled == {"global_val_acc": 0.25, "global_test_acc": 0.5}


def test_summary_picks_the_best_round_on_validation_never_test(tmp_path):
    rows = [
        {"round": 0, "global_val_acc": 0.1, "global_test_acc": 0.9},
        {
            "round": 1,
            "seconds": 1.0,
            "client_train_seconds_max": 0.1,
            "clients": 2,
            "global_val_acc": 0.5,
            "global_test_acc": 0.4,
        },
        {
            "round": 2,
            "seconds": 1.0,
            "client_train_seconds_max": 0.1,
            "clients": 2,
            "global_val_acc": 0.3,
            "global_test_acc": 0.6,
        },
    ]
    summary = outputs.summarize(rows, 2.0, RunConfig())
    assert summary["best_round"] == 1 and summary["best"]["global_test_acc"] == 0.4
    assert summary["final"]["global_test_acc"] == 0.6
    json.dumps(summary)


def test_federated_certificates_pool_client_ratios(tmp_path):
    certify = {"certify-budgets": "0,1,3", "certify-targets": 8, "certify-c": 0.01, "certify-labels-per-class": 5}
    config = RunConfig.from_flower({**RUN, **certify})
    grid = InProcessGrid(config, 3)
    report = certify_federation(grid, config, tmp_path)
    assert json.loads((tmp_path / "certificates.json").read_text()) == report
    ratios = [report["budgets"][k]["certified-ratio"] for k in ("0", "1", "3")]
    assert ratios[0] == 1.0  # no flips: every prediction stands
    assert ratios[0] >= ratios[1] >= ratios[2] >= 0.0
    assert report["targets"] == sum(c["num-targets"] for c in report["clients"]) > 0
    assert all(
        set(c)
        <= {"partition-id", "num-targets", "certify-seconds"}
        | {f"{name}-{k}" for name in ("certified-ratio", "certified-accuracy", "unknown-ratio") for k in (0, 1, 3)}
        for c in report["clients"]
    ), "a client sent more than aggregate ratios"
