"""A task brings the defaults its data needs: ``task='graph-classification'`` alone runs."""

import json

import stamen
from stamen.contract.run_config import RunConfig


def test_graph_classification_alone_takes_its_tasks_dataset_and_partitioner():
    config = RunConfig.from_flower({"task": "graph-classification"})
    assert (config.dataset, config.partitioner) == ("graphs-synth", "random")
    chosen = RunConfig.from_flower({"task": "graph-classification", "partitioner": "label-dirichlet"})
    assert (chosen.dataset, chosen.partitioner) == ("graphs-synth", "label-dirichlet")  # a choice is kept
    listed = RunConfig.from_flower({"task": "graph-classification", "dataset": "graphs-synth+tu:MUTAG"})
    assert listed.partitioner == "cross-dataset"  # a dataset list: one dataset per client
    node = RunConfig.from_flower({})
    assert (node.dataset, node.partitioner) == ("csbm", "louvain")  # the other tasks keep the run config's


def test_graph_classification_alone_runs(tmp_path):
    run = stamen.run({"task": "graph-classification", "num-server-rounds": 2}, clients=3, out=tmp_path)
    assert run.status is stamen.RunStatus.FINISHED
    recorded = json.loads((run.dir / "config.json").read_text())
    assert (recorded["dataset"], recorded["partitioner"]) == ("graphs-synth", "random")
    assert run.summary["final"]["global_test_acc"] is not None
