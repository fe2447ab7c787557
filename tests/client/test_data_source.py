"""The ClientApp's data-source hook: a harness hands one federation's clients other subgraphs,
for the length of a ``with`` block, and every other federation reads its graph as always."""

import pytest
import torch

from stamen.client.data_source import data_source, partition_data
from stamen.client.job import client_data
from stamen.contract.run_config import RunConfig
from stamen.graphs import FederationSpec

CPU = torch.device("cpu")


def _spec(seed: int) -> FederationSpec:
    return RunConfig.from_flower({"csbm-nodes": 200, "seed": seed}).federation(2)


def test_an_open_source_serves_its_federation_only_and_closes_with_its_block():
    spec, other = _spec(0), _spec(1)
    planted = client_data(spec, 1, CPU).clone()
    planted.x = planted.x * 5.0
    with data_source(spec, lambda partition_id: planted):
        assert torch.equal(partition_data(spec, 1, CPU).x, planted.x)
        assert torch.equal(partition_data(other, 1, CPU).x, client_data(other, 1, CPU).x)
        with pytest.raises(RuntimeError, match="already open"):
            with data_source(spec, lambda partition_id: planted):
                pass
    assert torch.equal(partition_data(spec, 1, CPU).x, client_data(spec, 1, CPU).x)


def test_a_source_closes_when_its_block_fails():
    spec = _spec(0)
    with pytest.raises(KeyError):
        with data_source(spec, lambda partition_id: {}[partition_id]):
            partition_data(spec, 0, CPU)
    assert torch.equal(partition_data(spec, 0, CPU).x, client_data(spec, 0, CPU).x)
