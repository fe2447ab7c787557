"""`stamen bench gpu`: refuses a GPU it cannot see, and on the CPU records where the clients really ran."""

import json
import subprocess
import sys

import pytest
import torch

from stamen.benches.gpu import check_devices, rows


@pytest.mark.slow
def test_bench_gpu_on_the_cpu_writes_the_table(tmp_path):
    out = tmp_path / "benchmarks"
    command = [
        sys.executable,
        "-m",
        "stamen.cli.main",
        "bench",
        "gpu",
        "--devices",
        "cpu",
        "--csbm-nodes",
        "300",
    ]
    command += ["--clients", "3", "--rounds", "3", "--local-epochs", "1", "--models", "gcn,mlp", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "[bench gpu 2/2] mlp on cpu, csbm 300: " in result.stderr  # each finished unit, on stderr
    assert "client train s / round" in result.stdout  # the table in a pipe: laid out wide, headers whole
    record = json.loads((out / "gpu.json").read_text())
    assert [(e["model"], e["device"], e["client_devices"]) for e in record["results"]] == [
        ("gcn", "cpu", ["cpu"]),
        ("mlp", "cpu", ["cpu"]),
    ]
    for entry in record["results"]:
        assert entry["seconds_per_round"] > 0 and entry["gpu_peak_memory_mb"] is None
        assert 0 <= entry["test_acc_at_best_val"] <= 1
    assert "| csbm 300 nodes | mlp | cpu | cpu |" in (out / "gpu.md").read_text()


def test_a_gpu_run_is_refused_where_none_is_visible(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA device is visible"):
        check_devices(["cpu", "cuda"])
    check_devices(["cpu"])
    with pytest.raises(ValueError, match="cpu, cuda or cuda:N, got 'auto'"):
        check_devices(["auto"])  # a bench must say which device it times


def test_the_speed_up_is_against_the_cpu_run_of_the_same_model():
    def entry(model, device, seconds):
        return {
            "dataset": "csbm",
            "csbm_nodes": 1000,
            "model": model,
            "device": device,
            "client_devices": [device],
            "seconds_per_round": seconds,
            "client_train_seconds_per_round": seconds / 2,
            "first_round_seconds": 1.0,
            "test_acc_at_best_val": 0.5,
            "gpu_peak_memory_mb": None if device == "cpu" else 12.0,
        }

    table = rows({"results": [entry("gcn", "cpu", 4.0), entry("gcn", "cuda", 0.5), entry("gat", "cuda", 1.0)]})
    assert [row[6] for row in table] == ["1.0x", "8.0x", "-"]
