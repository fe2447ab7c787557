"""Secure aggregation (Flower's SecAgg+) in the round loop, in-process: same aggregate as FedAvg within the
quantisation error, nothing but masked vectors on the server, dropouts, DP-SGD on top, the config rules."""

import numpy as np
import pytest
from flwr.common import bytes_to_ndarray
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage

from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import TooFewClientsError, run_rounds
from stamen.server.secagg import SecureAggregationGrid
from stamen.simulations.inprocess import InProcessGrid, task_identity

RUN = {"num-server-rounds": 1, "csbm-nodes": 600, "local-epochs": 2, "min-clients": 2}
CLIP, LEVELS = 8.0, 2**22  # Flower's SecAgg+ defaults: clipping range, quantisation levels


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


class DropAt(InProcessGrid):
    """Nodes that go silent when the server first sends them the SecAgg+ stage ``stage``."""

    def __init__(self, run_config: dict, stage: str, nodes: set[int]) -> None:
        super().__init__(run_config, 3)
        self.stage, self.nodes = stage, nodes

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        stages = {m.content[RECORD_KEY_CONFIGS].get(Key.STAGE) for m in messages if RECORD_KEY_CONFIGS in m.content}
        if self.stage in stages:
            self.silent |= self.nodes
        return super().send_and_receive(messages, timeout=timeout)


def _run(secure: bool, grid=None, silent=frozenset(), **run):
    """One in-process run; its final weights, the replies the strategy saw (by partition), rows and grid."""
    config = RunConfig.from_flower({**RUN, "secure-aggregation": secure, **run})
    inner = grid(config.to_flower()) if grid is not None else InProcessGrid(config, 3, silent=silent)
    outer = SecureAggregationGrid(inner, config) if secure else inner
    replies, rows = {}, []

    def record(server_round, sent, valid):
        replies.update({int(reply.content[p.METRICS][p.PARTITION_ID]): reply for reply in valid})

    module = server_algorithm(config.algorithm)
    arrays = run_rounds(
        outer, module.make_strategy(config), config.num_server_rounds, module.AGGREGATES, config.min_clients, 60.0,
        rows.append, on_replies=record,
    )  # fmt: skip
    return arrays, replies, rows, outer


def _bound(replies: dict, max_weight: float = 1000.0) -> float:
    """SecAgg+'s error per weight: a quantisation step per client over the summed weights (stamen/server/secagg.py)."""
    examples = sum(int(reply.content[p.METRICS][p.NUM_EXAMPLES]) for reply in replies.values())
    return len(replies) * (2 * CLIP / LEVELS) * max_weight / examples + 1e-6


def _gap(a, b) -> float:
    assert list(a.keys()) == list(b.keys())
    return max(float(np.abs(a[name].numpy() - b[name].numpy()).max()) for name in a.keys())


@pytest.mark.parametrize("algorithm", ["fedavg", "fedprox"])
def test_the_secure_aggregate_is_fedavgs_within_the_quantisation_error(algorithm):
    plain, plain_replies, _, _ = _run(False, algorithm=algorithm)
    secure, _, rows, _ = _run(True, algorithm=algorithm)
    assert 0 < _gap(secure, plain) <= _bound(plain_replies)
    assert rows[-1]["clients"] == 3 and "global_test_acc" in rows[-1]
    again, _, _, _ = _run(True, algorithm=algorithm)  # same config and seed, same aggregate (seeded rounding)
    assert _gap(again, secure) == 0


def test_the_server_receives_masked_vectors_only():
    _, plain_replies, _, _ = _run(False)
    _, secure_replies, _, grid = _run(True)
    masked = next(stage for stage in grid.stages if stage.stage == Stage.COLLECT_MASKED_VECTORS)
    assert sorted(masked.received) == [100, 101, 102]
    received = masked.received[100]  # partition 0 as the server got it
    assert all(len(record) == 0 for record in received.array_records.values())  # no plain weights travelled
    vector = [bytes_to_ndarray(b) for b in received[RECORD_KEY_CONFIGS][Key.MASKED_PARAMETERS]]
    update = np.concatenate([array.numpy().ravel() for array in plain_replies[0].content[p.ARRAYS].values()])
    entries = np.concatenate([array.ravel() for array in vector[1:]]).astype(np.float64)  # [0]: the masked weight
    assert entries.size == update.size
    ratio = int(plain_replies[0].content[p.METRICS][p.NUM_EXAMPLES]) / 1000.0
    read_as_unmasked = (entries * (2 * CLIP / LEVELS) - CLIP) / ratio  # what it would mean without the masks
    assert np.abs(read_as_unmasked - update).mean() > 100 * np.abs(update).mean()
    assert 0.4 < entries.mean() / 2**32 < 0.6  # spread over the whole ring, as uniform masks make it
    # the strategy never sees a client's own weights: every reply it got carries the one aggregate
    own = plain_replies[0].content[p.ARRAYS]
    assert _gap(secure_replies[0].content[p.ARRAYS], secure_replies[2].content[p.ARRAYS]) == 0
    assert _gap(secure_replies[0].content[p.ARRAYS], own) > 10 * _bound(plain_replies)


def test_a_client_lost_after_sharing_its_keys_leaves_the_aggregate_of_the_others():
    survivors, survivor_replies, _, _ = _run(False, silent={2})
    secure, _, rows, _ = _run(True, grid=lambda config: DropAt(config, Stage.COLLECT_MASKED_VECTORS, {102}))
    assert _gap(secure, survivors) <= _bound(survivor_replies)
    assert rows[-1]["clients"] == 2
    assert [(f["node_id"], f["category"]) for f in rows[-1]["failed_clients"]] == [(102, "lost")]


def test_a_client_lost_while_unmasking_still_counts_its_masked_vector():
    plain, plain_replies, _, _ = _run(False)
    secure, _, rows, _ = _run(True, grid=lambda config: DropAt(config, Stage.UNMASK, {102}))
    assert _gap(secure, plain) <= _bound(plain_replies)
    assert rows[-1]["clients"] == 3  # its share holders rebuilt its mask seed


def test_too_many_dropouts_halt_the_round_in_one_line():
    with pytest.raises(TooFewClientsError, match=r"^round 1: secure aggregation halted after its 'share_keys' stage"):
        _run(True, grid=lambda config: DropAt(config, Stage.SHARE_KEYS, {101, 102}))


def test_dp_sgd_updates_are_aggregated_securely():
    run = {"privacy": "dp-sgd", "model": "sgc", "lr": 0.05, "num-server-rounds": 2}
    plain, plain_replies, plain_rows, _ = _run(False, **run)
    secure, _, rows, _ = _run(True, **run)
    assert all(0 < e < float("inf") for e in rows[-1]["epsilon"].values()) and len(rows[-1]["epsilon"]) == 3
    assert rows[-1]["epsilon"] == plain_rows[-1]["epsilon"]
    # round 2 trains from round 1's aggregates, which differ within the quantisation error: compare loosely
    assert _gap(secure, plain) < 100 * _bound(plain_replies)


def test_a_client_heavier_than_secagg_max_weight_fails_naming_the_key():
    with pytest.raises(ValueError, match=r"trains on \d+ nodes, more than secagg-max-weight=5 .*; raise secagg-"):
        _run(True, **{"secagg-max-weight": 5.0})


@pytest.mark.parametrize(
    ("run", "names"),
    [
        ({"algorithm": "local"}, "algorithm='local'"),
        ({"algorithm": "fedlog"}, "algorithm='fedlog'"),
        ({"algorithm": "fedper"}, "algorithm='fedper'"),
        ({"privacy": "client-dp"}, "privacy='client-dp'"),
        ({"min-clients": 1}, "min-clients=1"),
        ({"unlearn-request": "client:0"}, "unlearn-request"),
    ],
)
def test_secure_aggregation_is_refused_where_the_server_needs_each_update(run, names):
    with pytest.raises(ValueError, match="secure-aggregation=true") as error:
        RunConfig.from_flower({"secure-aggregation": True, **run})
    assert names in str(error.value) and "\n" not in str(error.value)
    RunConfig.from_flower(run)  # the same config without secure aggregation is fine


@pytest.mark.parametrize("algorithm", ["fedavg", "fedprox", "fedavgm"])
def test_secure_aggregation_is_accepted_with_averaging_algorithms(algorithm):
    privacy = "none" if algorithm == "fedprox" else "dp-sgd"
    RunConfig.from_flower({"secure-aggregation": True, "algorithm": algorithm, "privacy": privacy, "model": "sgc"})


TASK_RUNS = {
    "link-prediction": {"task": "link-prediction", "csbm-nodes": 300, "local-epochs": 5},
    "graph-classification": {"task": "graph-classification", "dataset": "graphs-synth", "partitioner": "random",
                             "model": "gin"},
}  # fmt: skip


@pytest.mark.parametrize("task", list(TASK_RUNS))
def test_every_tasks_secure_aggregate_is_fedavgs_within_the_quantisation_error(task, same_figures):
    """SecAgg+ sums weights whatever they score: a link predictor's and a graph classifier's aggregates are
    FedAvg's within the quantisation error, and the rows' figures (pooled by edges or graphs) agree to 1e-6."""
    plain, plain_replies, plain_rows, _ = _run(False, **TASK_RUNS[task])
    secure, _, rows, _ = _run(True, **TASK_RUNS[task])
    assert 0 < _gap(secure, plain) <= _bound(plain_replies)
    same_figures(rows, plain_rows, task)
