"""``stamen compare``: runs and sweep groups in one table, from their own records."""

import json
import statistics

import pytest

from stamen.cli.main import main as stamen

SMALL = "num-server-rounds=2 csbm-nodes=300"


def test_compare_reads_runs_and_sweep_groups_from_their_records(tmp_path, capsys):
    for name, lr in (("a", 0.01), ("b", 0.05)):
        args = ["run", "--engine", "inprocess", "--quiet", "--clients", "3"]
        assert stamen([*args, "-c", f"{SMALL} lr={lr} output-dir='{tmp_path}' run-name='{name}'"]) == 0
    sweep = ["sweep", "--name", "s", "--out", str(tmp_path), "--set", "lr=0.01", "--seeds", "0,1", "--clients", "3"]
    assert stamen([*sweep, "-c", SMALL]) == 0
    capsys.readouterr()
    plot = tmp_path / "compare.png"
    assert stamen(["compare", str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "s"), "--plot", str(plot),
                   "--json"]) == 0  # fmt: skip
    rows = json.loads(capsys.readouterr().out)
    assert [row["line"] for row in rows] == ["a", "b", "s: lr=0.01"]
    for row, name in zip(rows[:2], "ab"):
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        assert row["final_test_acc"] == summary["final"]["global_test_acc"] and row["runs"] == 1
    finals = [json.loads((tmp_path / "s" / f"lr=0.01,seed={k}" / "summary.json").read_text())["final"] for k in (0, 1)]
    assert rows[2]["runs"] == 2
    assert rows[2]["final_test_acc"] == pytest.approx(statistics.fmean(f["global_test_acc"] for f in finals))
    assert plot.stat().st_size > 0
    assert stamen(["compare", str(tmp_path / "nowhere")]) == 2


def test_plot_labels_name_the_config_values_that_differ_not_the_folders():
    from pathlib import Path

    from stamen.cli.commands.compare import Line, plot_labels

    base = {"algorithm": "fedavg", "model": "gcn", "dataset": "csbm", "lr": 0.01, "seed": 0, "run-name": "x"}
    lines = [
        Line("csbm-fedavg-20261201", [Path("a")], config={**base, "run-name": "csbm-fedavg-20261201"}),
        Line("csbm-fedprox-20261201", [Path("b")], config={**base, "algorithm": "fedprox", "lr": 0.05}),
        Line("s: lr=0.01", [Path("c")], config={**base, "seed": 3}, over_seeds=True),
    ]
    labels, shared = plot_labels(lines)
    twice = "algorithm=fedavg, lr=0.01"  # the folder's name only tells apart two lines that no value does
    assert labels == [f"csbm-fedavg-20261201: {twice}", "algorithm=fedprox, lr=0.05", f"s: lr=0.01: {twice}"]
    assert shared == "model gcn, dataset csbm"
    same = [Line("r1", [Path("a")], config=base), Line("r2", [Path("b")], config={**base, "run-name": "y"})]
    assert plot_labels(same) == (["r1", "r2"], "algorithm fedavg, model gcn, dataset csbm")
