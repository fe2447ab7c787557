"""``stamen tune``: the space's checks, a real in-process study that resumes, seeded trials, pruning, Ctrl-C."""

import csv
import json

import pytest

from stamen.cli.main import main as stamen
from stamen.contract.figures import BEST_VAL_ACC, FINAL_VAL_ACC, TEST_ACC_AT_BEST_VAL, headline
from stamen.experiments.tune_space import Dimension, Kind, parse_dimension
from stamen.server.loop import RunPruned
from stamen.server.rundir import RunDirectory

SMALL = ["--clients", "3", "-c", "csbm-nodes=300 num-server-rounds=2"]
SPACE = ["--space", "lr=log:1e-3..1e-1", "--space", "partitioner=cat:louvain,label-dirichlet"]


def _study(tmp_path, name, trials, *extra):
    return ["tune", "--name", name, "--out", str(tmp_path), "--trials", str(trials), "--startup", "1", *SMALL, *SPACE,
            *extra]  # fmt: skip


def _rows(folder):
    with open(folder / "tune.csv") as handle:
        return list(csv.DictReader(handle))


def test_a_dimension_is_checked_against_the_keys_declaration():
    assert parse_dimension("lr=log:1e-3..1e-1") == Dimension("lr", Kind.LOG, 1e-3, 1e-1)
    assert parse_dimension("local-epochs=int:1..5").distribution().high == 5
    assert parse_dimension("partitioner=cat:louvain,label-dirichlet").choices == ("louvain", "label-dirichlet")
    for bad, message in [
        ("lr", "KEY=KIND:VALUES"),
        ("lr=lin:0..1", "unknown kind 'lin'"),
        ("lrr=log:0.1..1", "did you mean 'lr'"),
        ("lr=log:0..1", "LOW > 0"),
        ("lr=float:0.1..0.01", "LOW must be below HIGH"),
        ("lr=float:-1..1", "lr must be > 0, got -1.0"),
        ("fedopt-beta-1=float:0..1", r"must lie in \[0, 1\), got 1.0"),
        ("local-epochs=float:1..5", "whole numbers; write local-epochs=int"),
        ("lr=int:1..5", "any number"),
        ("partitioner=cat:louvain,nope", "unknown partitioner 'nope'"),
        ("partitioner=float:0..1", "is not a number"),
        ("seed=int:0..3", "-c seed=N"),
        ("output-dir=cat:a,b", "--out"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_dimension(bad)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--space", "lr=log:0..1"], "LOW > 0"),
        (["--space", "lr=log:1e-3..1e-1", "--space", "lr=log:1e-3..1e-2"], "names lr twice"),
        (["--space", "lr=log:1e-3..1e-1", "-c", "lr=0.1"], "both searched and fixed"),
        (["--space", "lr=log:1e-3..1e-1", "-c", "val-frac=0.0"], "val-frac must be > 0"),
        (["--space", "lr=log:1e-3..1e-1", "-c", "run-name='x'"], "--out and --name"),
        ([], "give the search space"),
    ],
)
def test_a_bad_space_is_one_line_exit_2_before_anything_is_written(tmp_path, capsys, args, message):
    assert stamen(["tune", "--name", "bad", "--out", str(tmp_path / "out"), "--trials", "1", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_study_writes_its_table_and_files_resumes_to_n_and_repeats_with_its_seed(tmp_path, capsys):
    folder = tmp_path / "s"
    assert stamen(_study(tmp_path, "s", 3)) == 0
    out, err = capsys.readouterr()
    assert "[tune 3/3] " in err and "none left" in err and "\x1b" not in err  # a plain line per trial
    assert "the best 3 of 3 trials" in out and "val acc (best round)" in out
    first = _rows(folder)
    assert [row["trial"] for row in first] == ["0", "1", "2"]
    record = json.loads((folder / "tune.json").read_text())
    assert record["provenance"]["packages"]["flwr"] and record["setting"]["trials"] == 3
    assert {BEST_VAL_ACC, TEST_ACC_AT_BEST_VAL, FINAL_VAL_ACC} <= set(record["trials"][0])  # the declared names
    for trial in record["trials"]:  # the objective is the run's own best-round validation accuracy
        summary = json.loads((folder / f"trial-{trial['number']:04d}" / "summary.json").read_text())
        assert trial[BEST_VAL_ACC] == headline(summary["best"], "val")
        assert trial["best_round"] == summary["best_round"]
    best = max(record["trials"], key=lambda t: t[BEST_VAL_ACC])
    assert record["top"][0] == best["number"]
    assert (folder / "tune.png").stat().st_size > 0 and (folder / "study.db").is_file()

    assert stamen(_study(tmp_path, "s", 4)) == 0  # --trials 4: exactly one more
    assert "(3 done already)" in capsys.readouterr().out
    second = _rows(folder)
    assert second[:3] == first and [row["trial"] for row in second] == ["0", "1", "2", "3"]
    assert sorted(p.name for p in folder.glob("trial-*")) == [f"trial-{n:04d}" for n in range(4)]
    assert stamen(_study(tmp_path, "s", 4)) == 0 and len(_rows(folder)) == 4  # nothing left: nothing runs

    assert stamen(_study(tmp_path, "again", 2)) == 0  # the same seed: the same trials (TPE from trial 1 on)
    keys = ("lr", "partitioner", BEST_VAL_ACC)
    assert [[row[k] for k in keys] for row in _rows(tmp_path / "again")] == [
        [row[k] for k in keys] for row in first[:2]
    ]

    assert stamen(_study(tmp_path, "s", 5, "--sampler-seed", "1")) == 2  # another setting: refused, nothing run
    assert "another sampler_seed" in capsys.readouterr().err and len(_rows(folder)) == 4


def test_a_run_ended_by_its_observer_is_kept_and_marked_pruned(tmp_path):

    from stamen.contract.provenance import Provenance
    from stamen.contract.run_config import RunConfig
    from stamen.simulations import Engine, FederationConfig, run

    seen = []

    def observe(row):
        seen.append(row["round"])
        if row["round"] == 1:
            raise RunPruned("pruned by the test after round 1")

    config = RunConfig.from_mapping(
        {"csbm-nodes": 300, "num-server-rounds": 3, "output-dir": str(tmp_path), "run-name": "r"}
    )
    three, origin = FederationConfig(num_supernodes=3), Provenance.of_command("test")
    with pytest.raises(RunPruned):
        run(config, federation=three, engine=Engine.INPROCESS, provenance=origin, observe=observe)
    folder = RunDirectory(tmp_path / "r")
    assert folder.status()["status"] == "pruned" and "after round 1" in folder.status()["error"]
    assert [row["round"] for row in folder.rows()] == [0, 1] and seen == [0, 1]
    with pytest.raises(ValueError, match="in-process engine"):
        run(config, federation=three, engine=Engine.FLOWER, provenance=origin, observe=observe)


def test_ctrl_c_keeps_finished_trials_and_the_interrupted_one_runs_again(tmp_path, capsys, monkeypatch):
    import stamen.experiments.tune as tune

    real = tune._observer
    calls = []

    def interrupting(optuna, trial, spec):
        calls.append(trial.number)
        observe = real(optuna, trial, spec)
        if trial.number == 1:

            def stop(row):
                observe(row)
                if row["round"] == 1:
                    raise KeyboardInterrupt

            return stop
        return observe

    monkeypatch.setattr(tune, "_observer", interrupting)
    assert stamen(_study(tmp_path, "c", 2)) == 130
    assert "keeps its 1 finished trial(s)" in capsys.readouterr().err
    assert [row["outcome"] for row in _rows(tmp_path / "c")] == ["complete", "interrupted"]
    assert RunDirectory(tmp_path / "c" / "trial-0001").status()["status"] == "interrupted"
    assert stamen(_study(tmp_path, "c", 2)) == 0
    rows = _rows(tmp_path / "c")
    assert [row["outcome"] for row in rows] == ["complete", "interrupted", "complete"]
    assert (rows[2]["lr"], rows[2]["partitioner"]) == (rows[1]["lr"], rows[1]["partitioner"])  # as if never stopped


def test_values_already_tried_are_told_their_result_not_run_again(tmp_path, capsys):
    args = ["tune", "--name", "r", "--out", str(tmp_path), "--trials", "3", "--startup", "1", *SMALL,
            "--space", "partitioner=cat:louvain,label-dirichlet"]  # fmt: skip
    assert stamen(args) == 0  # 3 trials over 2 values: at least one repeat
    rows = _rows(tmp_path / "r")
    repeats = [row for row in rows if row["repeat_of"]]
    assert repeats and "not run again" in capsys.readouterr().out
    for row in repeats:
        earlier = rows[int(row["repeat_of"])]
        assert row["partitioner"] == earlier["partitioner"] and row[BEST_VAL_ACC] == earlier[BEST_VAL_ACC]
        assert row["run_dir"] == earlier["run_dir"] and not (tmp_path / "r" / f"trial-{int(row['trial']):04d}").exists()
    record = json.loads((tmp_path / "r" / "tune.json").read_text())
    assert len(record["top"]) == len({row["partitioner"] for row in rows})  # each config once in the table


def test_a_study_whose_every_trial_failed_exits_1_saying_so(tmp_path, capsys):
    code = stamen(
        ["tune", "--trials", "2", *SMALL, "--space", "lr=log:1e30..1e31", "--out", str(tmp_path), "--name", "s"]
    )
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.splitlines()[-1] == (
        f"stamen tune: failed: none of the study's 2 trials completed, so there are no best parameters; "
        f"{tmp_path / 's' / 'tune.csv'} says how each ended"
    )
    assert (tmp_path / "s" / "tune.csv").is_file()  # the trials' record is kept


def test_a_damaged_study_database_is_one_line_exit_2(tmp_path, capsys):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "study.db").write_bytes(b"not a database at all" * 100)
    code = stamen(["tune", "--trials", "1", *SMALL, *SPACE, "--out", str(tmp_path), "--name", "s"])
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = [line for line in err.splitlines() if line.strip()]
    assert line.startswith(f"stamen tune: error: {folder / 'study.db'} is not a study Stamen can read (")
    assert line.endswith("move it away to start the study afresh, or give another --name")
    assert (folder / "study.db").read_bytes() == b"not a database at all" * 100  # left as it was
