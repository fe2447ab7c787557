"""``stamen.unlearn``: the command's unlearning of a finished run, its results as objects, its errors as its lines."""

import json

import pytest

import stamen
from stamen.cli.main import main as cli


@pytest.fixture
def run(tmp_path):
    return stamen.run({"csbm-nodes": 300, "num-server-rounds": 3}, clients=3, out=tmp_path, run_name="tiny")


def test_unlearn_writes_and_returns_the_commands_results(run, capsys, same_figures):
    (done,) = stamen.unlearn(run, "class:1", methods=["wash"])
    assert capsys.readouterr().out == ""
    assert done.dir == run.dir / "unlearn" / "class-1"
    assert done.result == json.loads((done.dir / "result.json").read_text())
    assert done.result["request"] == "class:1" and done.result["methods"] == ["original", "retrain", "wash"]
    assert cli(["unlearn", str(run.dir), "--request", "class:1", "--methods", "wash", "--overwrite", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)["mean"]
    same_figures(_untimed(done.result["mean"]), _untimed(printed), "mean")
    with pytest.raises(FileExistsError, match="already holds results"):
        stamen.unlearn(run.dir, ["class:1"], methods="wash")


def _untimed(mean):
    """The figures of each method without its time (``time_ratio``: a measurement, not a result)."""
    return {method: {k: v for k, v in figures.items() if "time" not in k} for method, figures in mean.items()}


def test_a_bad_request_is_a_value_error_with_the_commands_line(run, capsys):
    with pytest.raises(ValueError) as error:
        stamen.unlearn(run, "client:3")
    assert cli(["unlearn", str(run.dir), "--request", "client:3"]) == 2
    assert capsys.readouterr().err == f"stamen unlearn: error: {error.value}\n"
    assert "client 3 is out of range 0..2" in str(error.value)
