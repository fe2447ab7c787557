"""`stamen bench unlearn` on a tiny setting: it runs and writes the tables, targets and misses."""

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_bench_unlearn_writes_tables_with_targets(tmp_path):
    out = tmp_path / "benchmarks"
    command = [sys.executable, "-m", "stamen.cli.main", "bench", "unlearn", "--dataset", "csbm"]
    command += ["--csbm-nodes", "400", "--clients", "3", "--rounds", "3", "--seeds", "0", "--methods", "wash"]
    command += ["--requests", "class:1,nodes:0:0.5", "--name", "tiny", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    record = json.loads((out / "tiny.json").read_text())
    assert [r["request"] for r in record["results"]] == ["class:1", "nodes:0:0.5"]
    for entry in record["results"]:
        assert entry["methods"] == ["original", "retrain", "wash"]
        assert all((c["missed_by"] is None) == (c["met"] is not False) for c in entry["targets"])
        assert all(c["missed_by"] is None or c["missed_by"] > 0 for c in entry["targets"])
        assert set(entry["mia_gap"]) == {"mean", "std"}
    readme = (out / "tiny.md").read_text()
    assert "### class:1" in readme and "### nodes:0:0.5" in readme and "| wash |" in readme
    assert "MIA gap AUC_original - AUC_retrain" in readme
