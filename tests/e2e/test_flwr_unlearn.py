"""A real ``flwr run`` that trains, then forgets a class through Flower messages, then evaluates."""

import json
import os
import subprocess
import sys


def test_stamen_run_with_a_class_request_forgets_that_class_only(tmp_path):
    run_config = (
        f"output-dir='{tmp_path}' run-name='forget' num-server-rounds=4 csbm-nodes=900 csbm-signal=2.0 "
        "local-epochs=5 seed=0 unlearn-request='class:1'"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "simulations.cli",
            "run",
            "-c",
            run_config,
            "--federation-config",
            "num-supernodes=3 client-resources-num-cpus=1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_dir = tmp_path / "forget"
    unlearning = json.loads((run_dir / "unlearn.json").read_text())
    assert unlearning["method_used"] == "wash" and unlearning["evaluated_clients"] == [0, 1, 2]
    before, after = unlearning["original"], unlearning["unlearned"]
    assert before["test_forgotten_class"] > 0.5
    assert after["test_forgotten_class"] < 0.2 * before["test_forgotten_class"]
    assert abs(after["test_other_classes"] - before["test_other_classes"]) <= 0.05
    assert (run_dir / "unlearn.md").is_file()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["unlearning"]["unlearned"] == after
