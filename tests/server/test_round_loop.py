"""The round loop and the ClientApp together, through a grid that calls clients in-process."""

import json

import numpy as np
import pytest
from flwr.app import ArrayRecord, Message, MessageType, MetricRecord, RecordDict

from models import protocol as p
from models.run_config import RunConfig
from server import outputs
from server.algorithms import server_algorithm
from server.certification import certify_federation
from server.checkpoint import load_checkpoint, save_checkpoint
from server.loop import pooled_accuracies, run_rounds
from simulations.inprocess import InProcessGrid, task_identity


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
        kwargs.pop("grid", None) or InProcessGrid(config.to_flower(), 3, failing, silent),
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
    with pytest.raises(ValueError, match="nothing left to run"):
        _rows("fedavg", run={**run, "num-server-rounds": 2}, resume=resumed)


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
    grid = InProcessGrid(config.to_flower(), 3)
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
