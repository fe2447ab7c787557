"""A partitioner plug-in registered from Python (examples/09_own_partitioner.py): a run-config choice, refused
in one line where the run's other choices or the engine do not admit it, and its answer checked."""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import stamen
from stamen.common.registry import PYTHON, check_engine
from stamen.contract.plugins import plugin_choices
from stamen.contract.run_config import KEYS, RunConfig
from stamen.graphs.names import PARTITIONER_SPECS, graph_set_partitioners
from stamen.graphs.partition import partition_nodes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def ranges(registries):
    """The example's module (imported, not run as a script), its partitioner registered from Python."""
    module = types.ModuleType("stamen_example_ranges")
    module.__dict__.update(runpy.run_path(str(EXAMPLES / "09_own_partitioner.py"), run_name="stamen_example_ranges"))
    sys.modules["stamen_example_ranges"] = module
    stamen.register_partitioner(module.PARTITIONER)
    yield module
    del sys.modules["stamen_example_ranges"]


def test_a_registered_partitioner_is_a_choice_and_cuts_contiguous_ranges(ranges):
    assert "ranges" in PARTITIONER_SPECS and PARTITIONER_SPECS.origin("ranges") == PYTHON
    assert "ranges" in KEYS["partitioner"].choices and "ranges" not in graph_set_partitioners()
    assert RunConfig.from_flower({"partitioner": "ranges"}).partitioner == "ranges"
    parts = partition_nodes(Data(num_nodes=10, edge_index=torch.zeros(2, 0, dtype=torch.long)), 3, "ranges")
    assert [part.tolist() for part in parts] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


def test_what_the_run_does_not_admit_is_refused_in_one_line_naming_it(ranges):
    with pytest.raises(ValueError) as error:
        RunConfig.from_flower({"task": "graph-classification", "partitioner": "ranges"})
    assert "partitioner='ranges' cuts one graph by its edges" in str(error.value) and "\n" not in str(error.value)
    config = RunConfig.from_flower({"partitioner": "ranges"})
    for engine in ("flower", "deployment"):
        with pytest.raises(ValueError, match="partitioner='ranges' is registered in this process only"):
            check_engine(plugin_choices(config), engine)


def test_a_partitioner_that_does_not_cover_each_node_once_is_refused_naming_it(registries):
    module = types.ModuleType("stamen_test_overlap")
    module.overlap = lambda data, num_parts, seed, alpha: [np.arange(3), np.arange(2, 5)]  # node 2 twice
    sys.modules["stamen_test_overlap"] = module
    try:
        stamen.register_partitioner(stamen.PartitionerSpec("overlap", "o", function="stamen_test_overlap:overlap"))
        with pytest.raises(ValueError, match="partitioner 'overlap' did not return 2 disjoint parts covering each"):
            partition_nodes(Data(num_nodes=5, edge_index=torch.zeros(2, 0, dtype=torch.long)), 2, "overlap")
    finally:
        del sys.modules["stamen_test_overlap"]


def test_specs_that_cannot_be_partitioners_are_refused(registries):
    with pytest.raises(ValueError, match="is a stamen.PartitionerSpec"):
        stamen.register_partitioner("mine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must name module:function"):
        stamen.register_partitioner(stamen.PartitionerSpec("mine", "m", function="not a path"))
    with pytest.raises(ValueError, match="must be lower-case letters"):
        stamen.register_partitioner(stamen.PartitionerSpec("cross-dataset", "m", function="my.module:f"))
    with pytest.raises(ValueError, match="already registered"):
        stamen.register_partitioner(stamen.PartitionerSpec("louvain", "m", function="my.module:f"))
