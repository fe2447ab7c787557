"""`stamen bench fedlog` on a tiny setting: it runs every variant, reports progress, writes the table."""

import json
import re
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_bench_fedlog_writes_json_and_markdown(tmp_path):
    out = tmp_path / "benchmarks"
    command = [
        sys.executable,
        "-m",
        "stamen.cli.main",
        "bench",
        "fedlog",
        "--dataset",
        "csbm",
        "--csbm-nodes",
        "300",
    ]
    command += ["--clients", "2,3", "--seeds", "0", "--rounds", "2"]
    command += ["--algorithms", "local,fedavg,fedlog,fedlog-no-cd"]
    command += ["-c", "fedlog-warmup-epochs=2", "-c", "fedlog-generator-epochs=2", "-c", "csbm-features=16"]
    command += ["--missing-classes", "1", "--jobs", "2", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # each finished run is a progress line on stderr (the tables stay on stdout), none of a run's own rounds
    assert "[bench fedlog 8/8] " in result.stderr and "[fedlog-no-cd, K=3, seed 0] round" not in result.stdout
    for label in ("local, K=2, seed 0", "fedlog-no-cd, K=3, seed 0"):  # progress per run, from both workers
        assert f"[bench fedlog] {label} ..." in result.stdout and f"] {label}: " in result.stderr
    record = json.loads((out / "fedlog.json").read_text())
    assert len(record["results"]) == 8 and record["setting"]["missing_classes"] == 1
    assert record["code"] is None or re.fullmatch(r"[0-9a-f]{4,40}(\+changes)?", record["code"])
    for entry in record["results"]:
        assert entry["wall_seconds"] > 0 and entry["personalized"]["round"] in (1, 2)
        assert all(0 <= entry["personalized"][s] <= 1 for s in ("seen", "unseen node", "missing class", "new client"))
        assert bool(entry["global"]) == (entry["algorithm"] != "local")
        assert entry["personalized_authors"]["round"] in (1, 2) and entry["cpu_seconds"] > 0
    table = (out / "fedlog.md").read_text()
    assert "| algorithm | K=2 seen | K=2 unseen node | K=2 missing class | K=2 new client | K=3 seen" in table
    assert "| fedlog-no-cd |" in table and "±" in table and "2 runs at once" in table
    for rule in ("Stamen's selection", "the authors' selection"):  # FedLoG against FedAvg per K and seed
        assert f"Per seed, the clients' models, {rule}" in table
    assert table.count("| 2 | 0 | ") == table.count("| 3 | 0 | ") == 2
    assert table.startswith("## fedlog\n") and not (out / "README.md").exists()  # its own files only


@pytest.mark.slow
def test_bench_fedlog_refuses_an_unknown_algorithm(tmp_path):
    command = [sys.executable, "-m", "stamen.cli.main", "bench", "fedlog", "--algorithms", "fedsage"]
    command += ["--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "unknown algorithm(s) ['fedsage']" in result.stderr
