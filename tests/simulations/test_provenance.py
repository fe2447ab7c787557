"""Every JSON output says where it came from: version, commit, packages, date, command, seeds."""

import json
import os
import sys

from stamen.cli.main import main as stamen
from stamen.contract.provenance import COMMAND_ENV, COMMIT_ENV
from stamen.simulations import lifetime

KEYS = {"stamen", "commit", "date", "command", "packages", "seeds", "python", "platform"}


def _check(record: dict, seeds: list[int]) -> None:
    provenance = record["provenance"]
    assert KEYS <= set(provenance), sorted(provenance)
    assert provenance["seeds"] == seeds and provenance["packages"]["flwr"] and provenance["packages"]["torch"]
    assert provenance["stamen"] and provenance["date"][:2] == "20"


def test_run_certify_and_unlearn_json_carry_provenance(tmp_path, capsys):
    config = f"num-server-rounds=2 csbm-nodes=300 seed=3 output-dir='{tmp_path}' run-name='r'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 0
    for name in ("status.json", "summary.json"):
        _check(json.loads((tmp_path / "r" / name).read_text()), [3])
    certify = ["certify", "--dataset", "csbm-paper", "--csbm-nodes", "40", "--labeled-per-class", "4", "--targets", "4"]
    assert stamen([*certify, "--budgets", "1", "--out", str(tmp_path / "cert"), "--seed", "1"]) == 0
    _check(json.loads((tmp_path / "cert" / "certificate.json").read_text()), [1])
    assert stamen(["unlearn", str(tmp_path / "r"), "--request", "class:1", "--methods", "wash"]) == 0
    (result,) = (tmp_path / "r" / "unlearn").glob("*/result.json")
    _check(json.loads(result.read_text()), [3])


def test_started_processes_record_the_command_that_started_them_without_changing_its_environment(monkeypatch):
    """A process Stamen starts is handed this process's command and commit in its environment; one handed
    a provenance explicitly (a sweep's run) keeps it; the starting process's own environment stays as it was."""
    monkeypatch.delenv(COMMAND_ENV, raising=False)
    monkeypatch.setattr("sys.argv", ["stamen", "run", "--clients", "3"])
    monkeypatch.setattr(lifetime, "Bound", lambda command, **popen: popen["env"])  # what the process would get
    before = dict(os.environ)

    plain = lifetime.start([sys.executable, "-c", "pass"])
    assert plain[COMMAND_ENV] == "stamen run --clients 3" and COMMIT_ENV in plain
    assert {key: plain[key] for key in before} == before
    handed = lifetime.start([sys.executable, "-c", "pass"], env={"PATH": "/bin", COMMAND_ENV: "stamen sweep"})
    assert handed[COMMAND_ENV] == "stamen sweep" and handed["PATH"] == "/bin" and COMMIT_ENV in handed
    assert dict(os.environ) == before
