"""Graph classification in a deployment: a SuperLink and 3 SuperNodes on the loopback, TLS and node auth, each
node reading only its own exported graphs (stamen.graphs.node_data), give the in-process engine's rows."""

import json

import pytest

from stamen.contract import figures as f
from stamen.graphs.node_data import export_partitions
from stamen.simulations.deploy.local import LocalDeployment

NUM_NODES = 3
RUN = {
    "task": "graph-classification",
    "dataset": "graphs-synth",
    "partitioner": "label-dirichlet",
    "model": "gin",
    "num-server-rounds": 2,
    "local-epochs": 2,
    "dropout": 0.0,
    "seed": 1,
    "min-clients": NUM_NODES,
    "round-timeout": 150.0,
}


@pytest.mark.slow
def test_a_deployed_graph_classification_gives_the_in_process_rows(tmp_path, same_in_process):
    from stamen.contract.run_config import RunConfig

    spec = RunConfig.from_flower(RUN).federation(NUM_NODES)
    roots = [path.parent for path in export_partitions(spec, tmp_path / "data")]
    config = {**RUN, "output-dir": str(tmp_path), "run-name": "deployed"}
    with LocalDeployment(
        tmp_path / "deployment", NUM_NODES, node_config={"device": "cpu"}, data_roots=roots, use_namespaces=False
    ) as deployment:
        code = deployment.run(config)
        log = deployment.run_log()
    assert code == 0, log[-4000:]
    run_dir = tmp_path / "deployed"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows] == [0, 1, 2]
    assert all(row["clients"] == NUM_NODES and not row["failed_clients"] for row in rows[1:])
    assert f.GLOBAL_TEST_ACC in rows[-1] and json.loads((run_dir / "summary.json").read_text())["degraded"] is False
    twin = " ".join(f"{key}={value!r}" for key, value in config.items() if key != "run-name")
    same_in_process(run_dir, twin)  # every figure of every row, to 1e-6
