"""``stamen.tune``: the command's study from Python, the space as a dict, a list or a file; bad input as ValueError."""

import csv

import pytest

import stamen

TINY = {"csbm-nodes": 300, "num-server-rounds": 2}


def test_tune_from_python_is_the_commands_study_and_reads_a_space_file(tmp_path):
    (tmp_path / "space.toml").write_text(
        '[space]\nlr = "log:1e-3..1e-1"\npartitioner = ["louvain", "label-dirichlet"]\n'
    )
    study = stamen.tune(TINY, space=tmp_path / "space.toml", trials=2, clients=3,
                        name="t", out=tmp_path, startup=1)  # fmt: skip
    assert study.dir == tmp_path / "t" and [t["number"] for t in study.trials] == [0, 1]
    with open(study.dir / "tune.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [float(row["best_val_acc"]) for row in rows] == [t["best_val_acc"] for t in study.trials]
    best = max(study.trials, key=lambda t: t["best_val_acc"])
    assert study.best_params == best["params"] and study.best[0]["number"] == best["number"]
    assert study.to_pandas().shape[0] == 2 and "lr" in study.to_pandas().columns
    space = {"lr": "log:1e-3..1e-1", "partitioner": ["louvain", "label-dirichlet"]}  # the same space, as a dict
    again = stamen.tune(TINY, space=space, trials=2, clients=3, name="t", out=tmp_path, startup=1)
    assert again.trials == study.trials  # the same study: nothing left to run


@pytest.mark.parametrize(
    "space, message",
    [
        ({"lr": "log:0..1"}, r"^space lr: a log range needs LOW > 0, got 0; use float:LOW..HIGH$"),
        (["lr=nope"], r"^space 'lr=nope': write KEY=KIND:VALUES"),
        ({"lr": 0.1}, r"^space lr: give \"KIND:VALUES\""),
        ({}, r"^give the search space"),
    ],
)
def test_a_bad_space_is_a_value_error_before_anything_is_written(tmp_path, space, message):
    with pytest.raises(ValueError, match=message):
        stamen.tune(TINY, space=space, trials=1, name="bad", out=tmp_path / "out")
    assert not (tmp_path / "out").exists()
