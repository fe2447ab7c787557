"""Link prediction on both engines: ``stamen run`` over Flower's Ray engine (3 SuperNodes) and the
in-process engine give the same rows; the run directory, the table and the plot show the task's figures."""

import json

import pytest

from stamen.contract import figures as f


@pytest.mark.slow
@pytest.mark.ray
def test_link_prediction_gives_the_same_rows_on_both_engines(tmp_path, stamen_run, same_in_process):
    run_config = (
        f"output-dir='{tmp_path}' run-name='links' task='link-prediction' num-server-rounds=2 csbm-nodes=300 "
        "local-epochs=3 dropout=0.0 seed=1"
    )
    result = stamen_run(run_config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_dir = tmp_path / "links"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows] == [0, 1, 2]
    assert all(row["clients"] == 3 and not row["failed_clients"] for row in rows[1:])
    assert f.GLOBAL_TEST_AUC in rows[-1] and f.link_figure("cut", "auc", True) in rows[-1]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["task"] == "link-prediction" and summary["degraded"] is False
    assert summary["final"][f.GLOBAL_TEST_AUC] == rows[-1][f.GLOBAL_TEST_AUC]
    assert summary["fairness"]["figure"] == f.GLOBAL_TEST_AUC
    assert "global test AUC" in result.stdout and "global test accuracy" not in result.stdout
    assert "AUC per round" in (run_dir / "curves.svg").read_text()
    same_in_process(run_dir, run_config)  # the in-process engine computes the same rows
