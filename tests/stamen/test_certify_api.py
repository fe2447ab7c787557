"""``stamen.certify``: the command's certificates from Python, its report as an object, its errors as its lines."""

import json

import pytest

import stamen
from stamen.cli.main import main as cli

TINY = {"dataset": "csbm-paper", "csbm_nodes": 40, "labeled_per_class": 4, "targets": 6, "budgets": [0, 1, 2]}
TINY_ARGV = ["--dataset", "csbm-paper", "--csbm-nodes", "40", "--labeled-per-class", "4", "--targets", "6"]


def _answers(report):
    """The report without what varies between runs or names the call (timings, provenance, command)."""
    if isinstance(report, dict):
        return {k: _answers(v) for k, v in report.items() if "seconds" not in k and k not in ("provenance", "command")}
    return [_answers(v) for v in report] if isinstance(report, list) else report


def test_certify_returns_and_writes_the_commands_certificates(tmp_path, capsys):
    done = stamen.certify(out=tmp_path / "api", arch=["gcn", "sgc"], C=0.5, **TINY)
    assert capsys.readouterr().out == ""
    assert done.dir == tmp_path / "api"
    assert {p.name for p in done.dir.iterdir()} == {"certificate.json", "certified_accuracy.png", "report.md"}
    assert done.report == json.loads((done.dir / "certificate.json").read_text())
    assert done.report["command"].startswith("stamen.certify(")
    by_budget = done.certified_accuracy("gcn")
    assert set(by_budget) == {0, 1, 2} and by_budget[0] >= by_budget[1] >= by_budget[2]
    argv = [*TINY_ARGV, "--budgets", "0,1,2", "--arch", "gcn,sgc", "--C", "0.5"]
    assert cli(["certify", *argv, "--out", str(tmp_path / "cli"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert _answers(printed) == _answers(done.report)


@pytest.mark.parametrize(
    ("options", "argv"),
    [
        ({"arch": "gcx"}, ["--arch", "gcx"]),
        ({"budgets": "one"}, ["--budgets", "one"]),
        ({"attacker_client": 1}, ["--attacker-client", "1"]),
    ],
)
def test_bad_input_is_a_value_error_with_the_commands_line(tmp_path, capsys, options, argv):
    with pytest.raises(ValueError) as error:
        stamen.certify(out=tmp_path / "api", **options)
    assert cli(["certify", *argv, "--out", str(tmp_path / "cli")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {error.value}")
    assert not (tmp_path / "api").exists()


def test_an_unknown_option_and_a_full_folder_are_refused_before_work(tmp_path):
    with pytest.raises(ValueError, match="unknown certify option 'labelled-per-class'"):
        stamen.certify(out=tmp_path / "a", labelled_per_class=3)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("keep")
    with pytest.raises(ValueError, match="not empty; pass --overwrite"):
        stamen.certify(out=tmp_path / "full", **TINY)
    assert (tmp_path / "full" / "mine.txt").read_text() == "keep"
