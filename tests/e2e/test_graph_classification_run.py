"""Graph classification on both engines: ``stamen run`` over Flower's Ray engine (3 SuperNodes) and the
in-process engine give the same rows; the run directory, the table and the plot show accuracy over graphs.
The plain run trains with per-graph DP-SGD, so the one ``flwr run`` also carries each client's accountant
across rounds in Flower's node state (Poisson batches and noise seeded per client and round)."""

import json
import math

import pytest

from stamen.contract import figures as f


@pytest.mark.slow
@pytest.mark.ray
def test_graph_classification_gives_the_same_rows_on_both_engines(tmp_path, stamen_run, same_in_process):
    run_config = (
        f"output-dir='{tmp_path}' run-name='graphs' task='graph-classification' dataset='graphs-synth' "
        "partitioner='random' model='gin' num-server-rounds=2 local-epochs=2 dropout=0.0 seed=1 "
        "privacy='dp-sgd' noise-multiplier=0.8 lr=0.01"
    )
    result = stamen_run(run_config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_dir = tmp_path / "graphs"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows] == [0, 1, 2]
    assert all(row["clients"] == 3 and not row["failed_clients"] for row in rows[1:])
    for client in ("0", "1", "2"):  # each client's epsilon grows with its steps
        assert 0 < rows[1]["epsilon"][client] < rows[2]["epsilon"][client] < math.inf
    assert f.GLOBAL_TEST_ACC in rows[-1] and f.GLOBAL_TEST_AUC not in rows[-1]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["task"] == "graph-classification" and summary["degraded"] is False
    assert summary["dataset"] == "graphs-synth" and summary["model"] == "gin"
    assert summary["final"][f.GLOBAL_TEST_ACC] == rows[-1][f.GLOBAL_TEST_ACC]
    assert summary["privacy"]["epsilon"] == rows[-1]["epsilon"]
    assert "global test accuracy (pooled over all clients' test graphs)" in result.stdout
    assert "accuracy per round" in (run_dir / "curves.svg").read_text()
    same_in_process(run_dir, run_config)  # the in-process engine computes the same rows


@pytest.mark.slow
@pytest.mark.ray
def test_fedstar_gives_the_same_rows_on_both_engines(tmp_path, stamen_run, same_in_process):
    """FedStar's clients keep their feature branch and head in Flower's node state, which the Ray engine
    carries between its actors: the rows are the in-process engine's."""
    run_config = (
        f"output-dir='{tmp_path}' run-name='fedstar' task='graph-classification' dataset='graphs-synth' "
        "partitioner='label-dirichlet' model='gin' algorithm='fedstar' num-server-rounds=2 dropout=0.0 seed=1"
    )
    result = stamen_run(run_config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "fedstar" / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows] == [0, 1, 2] and not rows[-1]["failed_clients"]
    same_in_process(tmp_path / "fedstar", run_config)
