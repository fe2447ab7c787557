"""Exported partitions: a host reads its own subgraph, identical to the one cut in memory."""

import pytest
import torch

from stamen.client.job import client_data
from stamen.graphs import FederationSpec, build_federation
from stamen.graphs.node_data import export_partitions

SPEC = FederationSpec(dataset="csbm", num_clients=3, seed=1, dataset_options=(("num_nodes", 300),))


def test_a_node_reads_exactly_its_own_partition(tmp_path):
    roots = [path.parent for path in export_partitions(SPEC, tmp_path)]
    expected = build_federation(SPEC).clients[1]
    spec = FederationSpec(**{**SPEC.__dict__, "data_root": str(roots[1])})
    data = client_data(spec, 1, torch.device("cpu"))
    for name in ("x", "edge_index", "y", "global_id", "train_mask", "val_mask", "test_mask"):
        assert torch.equal(getattr(data, name), getattr(expected, name)), name
    assert data.num_classes == expected.num_classes


def test_a_partition_for_other_settings_is_refused(tmp_path):
    roots = [path.parent for path in export_partitions(SPEC, tmp_path)]
    wrong_node = FederationSpec(**{**SPEC.__dict__, "data_root": str(roots[0])})
    with pytest.raises(ValueError, match="holds partition 0, but this SuperNode has partition-id=2"):
        client_data(wrong_node, 2, torch.device("cpu"))
    other_seed = FederationSpec(**{**SPEC.__dict__, "seed": 2, "data_root": str(roots[0])})
    with pytest.raises(ValueError, match="seed differ"):
        client_data(other_seed, 0, torch.device("cpu"))
