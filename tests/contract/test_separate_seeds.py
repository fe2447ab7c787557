"""``data-seed``, ``partition-seed`` and ``model-seed``: each part of a run's randomness on its own seed, so the
variance of each can be measured apart; unset (-1), each takes ``seed`` and a run is what it was without them."""

import pytest
import torch

import stamen
from stamen.contract.figures import ROW_TIMINGS
from stamen.contract.run_config import RunConfig
from stamen.graphs.federation import build_federation

SMALL = {"csbm-nodes": 300, "num-server-rounds": 2}


def _federation(**keys):
    return build_federation(RunConfig(csbm_nodes=300, **keys).federation(3))


def _figures(rows):
    measured = {"client_processes"}  # the processes' memory: measured, not computed
    return [{k: v for k, v in row.items() if k not in {*ROW_TIMINGS, *measured} and "seconds" not in k} for row in rows]


def test_with_the_three_unset_every_row_is_the_seed_s(tmp_path):
    unset = stamen.run({**SMALL, "seed": 3}, clients=3, out=tmp_path, run_name="unset")
    each = {"data-seed": 3, "partition-seed": 3, "model-seed": 3}
    given = stamen.run({**SMALL, "seed": 3, **each}, clients=3, out=tmp_path, run_name="given")
    assert _figures(unset.rows) == _figures(given.rows) and len(unset.rows) == 3
    other = stamen.run({**SMALL, "seed": 4}, clients=3, out=tmp_path, run_name="other")
    assert _figures(other.rows) != _figures(unset.rows)  # the rows do depend on the seed


def test_the_data_seed_moves_the_graph_alone():
    base, moved = _federation(seed=1), _federation(seed=1, data_seed=2)
    assert not torch.equal(base.graph.x, moved.graph.x)
    assert torch.equal(_federation(seed=2).graph.x, moved.graph.x)  # the graph of seed 2
    assert torch.equal(_federation(seed=1, partition_seed=2).graph.x, base.graph.x)


def test_the_partition_seed_moves_the_partition_and_splits_not_the_graph():
    base, moved = _federation(seed=1), _federation(seed=1, partition_seed=2)
    assert torch.equal(base.graph.x, moved.graph.x) and torch.equal(base.graph.edge_index, moved.graph.edge_index)
    masks = [torch.equal(a.train_mask, b.train_mask) for a, b in zip(base.clients, moved.clients, strict=True)]
    assert base.digest != moved.digest or not all(masks)


def test_the_model_seed_moves_the_model_not_the_data(tmp_path):
    base = stamen.run({**SMALL, "seed": 1}, clients=3, out=tmp_path, run_name="base")
    moved = stamen.run({**SMALL, "seed": 1, "model-seed": 2}, clients=3, out=tmp_path, run_name="moved")
    assert _figures(base.rows)[1:] != _figures(moved.rows)[1:]
    assert _federation(seed=1, model_seed=2).digest == _federation(seed=1).digest


@pytest.mark.parametrize("key", ["data-seed", "partition-seed", "model-seed"])
def test_a_seed_below_minus_one_is_refused(key, tmp_path):
    with pytest.raises(ValueError, match=key):
        stamen.run({**SMALL, key: -2}, clients=3, out=tmp_path)
