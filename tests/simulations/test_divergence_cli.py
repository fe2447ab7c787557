"""A run whose training diverges (``lr=1e30``) ends ``failed``, naming the round, with exit code 1 and
strict JSON files (no bare NaN)."""

import json

import pytest

from stamen.cli.main import main as stamen


def _strict(text: str):
    def refuse(token: str):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "algorithm,problem",
    [
        ("fedavg", "the global model's weights are not finite (nan in "),
        ("local", "the clients' training loss is not finite"),
    ],
)
def test_a_diverging_run_fails_naming_the_round(algorithm, problem, tmp_path, capsys):
    config = f"num-server-rounds=4 csbm-nodes=300 lr=1e30 algorithm='{algorithm}' output-dir='{tmp_path}' run-name='d'"
    code = stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config])
    err = capsys.readouterr().err
    assert code == 1, err
    assert f"failed: the run failed: round 2: {problem}" in err and "lower lr" in err, err
    run = tmp_path / "d"
    status = _strict((run / "status.json").read_text())
    assert status["status"] == "failed" and status["error"].startswith(f"round 2: {problem}")
    rows = [_strict(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["round"] for row in rows][-2:] == [1, 2]  # rounds 3 and 4 never ran
    assert rows[-1]["train_loss"] is None  # NaN, written as null
    for path in run.glob("*.json"):  # whatever JSON the failed run left, strict
        _strict(path.read_text())


@pytest.mark.slow
@pytest.mark.ray
def test_a_diverging_run_on_flowers_engine_fails_naming_the_round(tmp_path, capsys):
    config = f"num-server-rounds=4 csbm-nodes=300 lr=1e30 output-dir='{tmp_path}' run-name='d'"
    assert stamen(["run", "--quiet", "--clients", "3", "-c", config]) == 1
    err = capsys.readouterr().err
    assert "failed: the run failed: round 2: the global model's weights are not finite" in err, err
    status = _strict((tmp_path / "d" / "status.json").read_text())
    assert status["status"] == "failed" and status["error"].startswith("round 2: ")
    for line in (tmp_path / "d" / "metrics.jsonl").read_text().splitlines():
        _strict(line)
