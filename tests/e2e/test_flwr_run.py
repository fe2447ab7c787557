"""A real ``flwr run`` simulation: our own SuperLink, Flower's Ray engine, 3 SuperNodes.

One run covers what a run does after training too (certificates, then forgetting a class
through Flower messages): each Flower start costs tens of seconds.
"""

import json
import os
from pathlib import Path

import pytest


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command and "pytest" not in command:
            found.append(command)
    return found


@pytest.mark.slow
@pytest.mark.ray
def test_stamen_run_trains_certifies_and_forgets_a_class(tmp_path, stamen_run, same_in_process):
    run_config = (
        f"output-dir='{tmp_path}' run-name='e2e' num-server-rounds=4 csbm-nodes=900 csbm-signal=2.0 local-epochs=5 "
        "seed=0 certify-budgets='1,2' certify-targets=5 certify-labels-per-class=5 unlearn-request='class:1'"
    )
    result = stamen_run(run_config)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    run_dir = tmp_path / "e2e"
    for name in ("config.json", "metrics.jsonl", "summary.json", "model.pt", "curves.svg"):
        assert (run_dir / name).is_file(), name
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows] == [0, 1, 2, 3, 4]
    assert all(row["clients"] == 3 for row in rows[1:])
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"] + 0.2
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["final"]["global_test_acc"] == rows[-1]["global_test_acc"]
    assert "global test accuracy" in result.stdout  # the final table
    certificates = json.loads((run_dir / "certificates.json").read_text())
    assert len(certificates["clients"]) == 3 and certificates["targets"] > 0
    ratios = [certificates["budgets"][k]["certified-ratio"] for k in ("1", "2")]
    assert 1.0 >= ratios[0] >= ratios[1] >= 0.0
    unlearning = json.loads((run_dir / "unlearn.json").read_text())
    assert unlearning["method_used"] == "wash" and unlearning["evaluated_clients"] == [0, 1, 2]
    before, after = unlearning["original"], unlearning["unlearned"]
    assert before["test_forgotten_class"] > 0.5
    assert after["test_forgotten_class"] < 0.2 * before["test_forgotten_class"]
    assert abs(after["test_other_classes"] - before["test_other_classes"]) <= 0.05
    assert (run_dir / "unlearn.md").is_file()
    assert summary["unlearning"]["unlearned"] == after
    flower_homes = str(Path(os.environ["STAMEN_CACHE"]) / "flower")
    assert not _processes_mentioning(flower_homes), "a Flower process outlived the run"
    same_in_process(run_dir, run_config)  # the in-process engine computes the same figures
