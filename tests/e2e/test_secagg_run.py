"""A real ``stamen run`` (``flwr run``, Ray) with secure aggregation: SecAgg+ through Flower's engine."""

import json

import pytest


@pytest.mark.slow
@pytest.mark.ray
def test_secure_aggregation_simulation_trains_and_matches_the_in_process_engine(tmp_path, stamen_run, same_in_process):
    run_config = (
        f"output-dir='{tmp_path}' run-name='secagg' num-server-rounds=2 csbm-nodes=600 local-epochs=2 seed=0 "
        "secure-aggregation=true"
    )
    result = stamen_run(run_config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    log = (tmp_path / "secagg" / "run.log").read_text()
    assert log.count("Secure aggregation completed") == 2  # Flower's SecAgg+ workflow ran each round
    rows = [json.loads(line) for line in (tmp_path / "secagg" / "metrics.jsonl").read_text().splitlines()]
    trained = [row for row in rows if row["round"] >= 1]
    assert [row["round"] for row in trained] == [1, 2]
    assert all(row["clients"] == 3 and row["failed_clients"] == [] for row in trained)
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"]
    same_in_process(tmp_path / "secagg", run_config)  # same aggregates: the rounding is seeded, the masks cancel
