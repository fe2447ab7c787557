"""A real ``stamen run`` (``flwr run``) with DP-SGD clients: epsilon finite, growing, and the model learns."""

import json
import math

import pytest


@pytest.mark.slow
@pytest.mark.ray
def test_dp_sgd_simulation_reports_a_growing_epsilon_and_learns(tmp_path, stamen_run, same_in_process):
    run_config = (
        f"output-dir='{tmp_path}' run-name='dp' num-server-rounds=3 csbm-nodes=900 local-epochs=2 seed=0 "
        "privacy='dp-sgd' model='sgc' noise-multiplier=1.0 lr=0.05 dp-batch-size=32"
    )
    result = stamen_run(run_config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "dp" / "metrics.jsonl").read_text().splitlines()]
    trained = [row for row in rows if row["round"] >= 1]
    assert [row["round"] for row in trained] == [1, 2, 3]
    for client in ("0", "1", "2"):
        series = [row["epsilon"][client] for row in trained]
        assert all(0 < e < math.inf for e in series) and series == sorted(series) and series[0] < series[-1]
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"] + 0.2
    summary = json.loads((tmp_path / "dp" / "summary.json").read_text())
    assert summary["privacy"]["epsilon"] == rows[-1]["epsilon"]
    assert "dp-sgd at delta=1e-05" in result.stdout + result.stderr  # the final privacy table
    same_in_process(tmp_path / "dp", run_config)  # the in-process engine computes the same figures, noise included


@pytest.mark.slow
@pytest.mark.ray
def test_client_level_dp_simulation_runs_with_client_side_clipping_and_reports_epsilon(
    tmp_path, stamen_run, same_in_process
):
    """Client-side adaptive clipping through a real ``flwr run``: Flower's mod on every client, the
    server's wrapper (Stamen's corrected adaptive rule), the accountant's epsilon per round."""
    run_config = (
        f"output-dir='{tmp_path}' run-name='cdp' num-server-rounds=3 csbm-nodes=600 local-epochs=2 seed=0 "
        "privacy='client-dp' clipping='client-adaptive' clipping-norm=0.5 noise-multiplier=0.2 model='sgc' lr=0.05"
    )
    result = stamen_run(run_config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "cdp" / "metrics.jsonl").read_text().splitlines()]
    trained = [row for row in rows if row["round"] >= 1]
    assert [row["round"] for row in trained] == [1, 2, 3]
    series = [row["client_dp_epsilon"] for row in trained]
    assert all(0 < e < math.inf for e in series) and series[0] < series[1] < series[2]
    assert all(row["clients"] == 3 for row in trained)
    summary = json.loads((tmp_path / "cdp" / "summary.json").read_text())
    assert summary["privacy"]["privacy"] == "client-dp" and summary["privacy"]["epsilon_max"] == series[-1]
    assert "global_test_acc" in rows[-1]
    same_in_process(tmp_path / "cdp", run_config)  # the same noise on both engines: it is seeded by the run's seed
