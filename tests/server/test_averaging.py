"""The server's weighted average is Flower's FedAvg aggregation to the bit, on every transport's replies."""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, Error, Message, MessageType, MetricRecord, RecordDict
from flwr.serverapp.strategy import FedAvg, FedProx
from flwr.serverapp.strategy.strategy_utils import aggregate_arrayrecords

from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.server.averaging import WeightedAverage, average_records
from stamen.simulations.inprocess import task_identity


def _reply(seed: int, examples: int, node: int) -> Message:
    generator = np.random.default_rng(seed)
    arrays = ArrayRecord(
        {
            "weight": Array(generator.standard_normal((64, 1433)).astype(np.float32)),
            "bias": Array(generator.standard_normal(7).astype(np.float32)),
            "double": Array(generator.standard_normal((3, 2))),
            "count": Array(np.array(seed + 3, dtype=np.int64)),
        }
    )
    content = RecordDict({p.ARRAYS: arrays, p.METRICS: MetricRecord({p.NUM_EXAMPLES: examples})})
    message = Message(content=content, dst_node_id=node, message_type=MessageType.TRAIN)
    return Message(content=content, reply_to=message)


def test_the_average_is_flowers_to_the_bit():
    with task_identity():  # Flower stamps messages with the running task's identity
        contents = [_reply(seed, examples, 100 + seed).content for seed, examples in enumerate([13, 140, 1, 77, 29])]
        ours, flowers = average_records(contents, p.NUM_EXAMPLES), aggregate_arrayrecords(contents, p.NUM_EXAMPLES)
    assert list(ours) == list(flowers)
    for name in flowers:
        assert ours[name].data == flowers[name].data, name  # the same np.save bytes: same dtype, shape, values


def test_the_strategy_leaves_out_error_replies_as_flowers_does():
    with task_identity():
        good = [_reply(seed, 10 + seed, 100 + seed) for seed in range(3)]
        failed = Message(error=Error(code=0, reason="node lost"), reply_to=_reply(9, 1, 109))
    options = {"weighted_by_key": p.NUM_EXAMPLES, "arrayrecord_key": p.ARRAYS}
    ours, _ = WeightedAverage(**options).aggregate_train(1, [*good, failed])
    flowers, _ = FedAvg(**options).aggregate_train(1, [*good, failed])
    assert {k: a.data for k, a in ours.items()} == {k: a.data for k, a in flowers.items()}
    assert WeightedAverage(**options).aggregate_train(1, [failed]) == (None, None)


def test_the_weight_averaging_algorithms_use_it():
    for name in ("fedavg", "fedprox", "fedsage-local", "fedsage+", "fedlog", "fedproto"):
        assert isinstance(server_algorithm(name).make_strategy(RunConfig(algorithm=name)), WeightedAverage), name
    assert isinstance(server_algorithm("fedprox").make_strategy(RunConfig(algorithm="fedprox")), FedProx)
