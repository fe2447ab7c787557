"""``stamen sweep``: the grid, the names, the statistics, and a real in-process sweep that resumes."""

import json
import statistics

import pytest

from stamen.cli.main import main as stamen
from stamen.experiments.sweep import SweepRun, grid, groups, parse_seeds, parse_set

SMALL = "num-server-rounds=2 csbm-nodes=300"


def test_set_values_are_toml_and_quoted_strings_may_hold_commas():
    assert parse_set("lr=0.01,0.005") == ("lr", [0.01, 0.005])
    assert parse_set("model='gcn','sage'") == ("model", ["gcn", "sage"])
    assert parse_set("certify-budgets='1,2','3'") == ("certify-budgets", ["1,2", "3"])
    for bad, message in [("lr", "key=value1,value2"), ("model=gcn", "strings need quotes"), ("lr=1,1", "repeats")]:
        with pytest.raises(ValueError, match=message):
            parse_set(bad)
    with pytest.raises(ValueError, match="--seeds"):
        parse_set("seed=1,2")
    assert parse_seeds("0,1, 2") == [0, 1, 2]
    with pytest.raises(ValueError, match="integers >= 0"):
        parse_seeds("-1")


def test_grid_is_every_combination_times_every_seed_with_plain_run_names():
    runs = grid([("lr", [0.1, 0.2]), ("model", ["gcn", "sage"])], [0, 1])
    assert len(runs) == 8 and len({r.name for r in runs}) == 8
    assert runs[0].name == "lr=0.1,model=gcn,seed=0" and runs[0].group == "lr=0.1,model=gcn"
    assert runs[0].overrides() == 'lr=0.1 model="gcn" seed=0'
    odd = SweepRun((("data-root", "/a b/c"),), 3)
    assert "/" not in odd.name and " " not in odd.name
    with pytest.raises(ValueError, match="twice"):
        grid([("lr", [0.1]), ("lr", [0.2])], [0])


def test_groups_take_mean_and_sample_std_over_seeds():
    runs = grid([("lr", [0.1])], [0, 1, 2])
    figures = {
        r.name: {"final_test_acc": a, "test_acc_at_best_val": a, "total_wall_seconds": 1.0}
        for r, a in zip(runs, [0.5, 0.7, 0.9])
    }
    (group,) = groups(runs, figures)
    stats = group.stats()["final_test_acc"]
    assert stats["mean"] == pytest.approx(0.7) and stats["std"] == pytest.approx(statistics.stdev([0.5, 0.7, 0.9]))
    assert stats["n"] == 3


def test_an_in_process_sweep_summarises_and_resumes(tmp_path, capsys):
    args = [
        "sweep",
        "--name",
        "s",
        "--out",
        str(tmp_path),
        "--set",
        "lr=0.01,0.05",
        "--seeds",
        "0,1",
        "-c",
        "num-server-rounds=2 csbm-nodes=300",
        "--federation-config",
        "num-supernodes=3",
    ]
    assert stamen(args) == 0
    out, err = capsys.readouterr()
    assert "lr=0.01" in out and "lr=0.05" in out and "±" in out
    assert "[sweep 1/4] " in err and "[sweep 4/4] " in err and "finished; " in err and "\x1b" not in err  # plain
    folder = tmp_path / "s"
    record = json.loads((folder / "sweep.json").read_text())
    assert record["provenance"]["seeds"] == [0, 1] and record["provenance"]["packages"]["flwr"]
    assert [g["config"] for g in record["groups"]] == ["lr=0.01", "lr=0.05"]
    for group in record["groups"]:
        finals = [run["final_test_acc"] for run in group["runs"]]
        summaries = [json.loads((folder / run["run"] / "summary.json").read_text()) for run in group["runs"]]
        assert finals == [s["final"]["global_test_acc"] for s in summaries]  # the runs' own records
        assert group["stats"]["final_test_acc"]["mean"] == pytest.approx(statistics.fmean(finals))
    assert (folder / "sweep.csv").read_text().startswith("config,runs,")
    assert (folder / "sweep.png").stat().st_size > 0
    # the same command again: every run finished, nothing runs again
    stamps = {p.name: (p / "status.json").stat().st_mtime_ns for p in folder.iterdir() if p.is_dir()}
    (folder / "lr=0.05,seed=1" / "status.json").write_text(json.dumps({"status": "failed"}))  # one to do again
    del stamps["lr=0.05,seed=1"]
    assert stamen(args) == 0
    assert "4 runs" in capsys.readouterr().out
    assert {name: (folder / name / "status.json").stat().st_mtime_ns for name in stamps} == stamps
    assert json.loads((folder / "lr=0.05,seed=1" / "status.json").read_text())["status"] == "finished"


@pytest.mark.parametrize("option", ["--set", "-c"])
@pytest.mark.parametrize(
    "item", ["run-name='x'", "output-dir='{tmp}/elsewhere'", "overwrite=true", "resume-from='{tmp}/runs/old'"]
)
def test_a_sweep_refuses_the_keys_that_name_and_place_its_runs(option, item, tmp_path, capsys):
    item = item.format(tmp=tmp_path)
    key = item.split("=")[0]
    argv = ["sweep", "--name", "s", "--out", str(tmp_path / "sweeps"), "--clients", "3", "-c", SMALL]
    argv += ["--set", "lr=0.01"] if option == "-c" else []
    assert stamen([*argv, option, item]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    where = "--set" if option == "--set" else "-c/--run-config"
    assert err.startswith(f"stamen sweep: error: {where} {key}=...: a sweep names its runs itself"), err
    assert "--out and --name" in err
    assert list(tmp_path.iterdir()) == []  # no sweep folder, no run, nothing elsewhere
