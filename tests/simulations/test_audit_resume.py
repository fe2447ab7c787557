"""``stamen audit privacy --out FILE`` as a long job: each audited run kept in ``FILE.partial.jsonl``.

In-process through :func:`stamen.cli.main.main`, interrupted right after the N-th audited run
is in the journal; the audited runs counted.
"""

import json

import pytest

from stamen.cli.commands import audit
from stamen.cli.main import main

ARGV = ["audit", "privacy", "--csbm-nodes", "300", "--rounds", "1", "--canaries-per-client", "10"]
ARGV += ["--local-epochs", "2", "--dp-sgd-epsilons", "4", "--client-dp-epsilons", "4"]  # 3 audited runs


def audited(monkeypatch):
    original, calls = audit.audit_run, []

    def counted(config, *args):
        calls.append(config.privacy)
        return original(config, *args)

    monkeypatch.setattr(audit, "audit_run", counted)
    return calls


def untimed(path):
    report = json.loads(path.read_text())
    return [{k: v for k, v in r.items() if k != "seconds"} for r in report["results"]]


def test_an_interrupted_audit_resumes_from_its_journal(tmp_path, monkeypatch, capsys, interrupt_long_job):
    whole = tmp_path / "whole.json"
    assert main([*ARGV, "--out", str(whole)]) == 0
    output = tmp_path / "audit.json"
    journal = tmp_path / "audit.json.partial.jsonl"
    restore = interrupt_long_job(2)
    assert main([*ARGV, "--out", str(output)]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"stamen audit: interrupted: kept 2 of 3 finished units in {journal}; resume with: ")
    assert not output.exists() and len(journal.read_text().splitlines()) == 1 + 2
    restore()
    runs = audited(monkeypatch)
    assert main([*ARGV, "--out", str(output)]) == 0  # the journal is there, --out is not: resumed, not refused
    assert runs == ["client-dp"]
    assert "2 of 3 units kept from the journal" in capsys.readouterr().err
    assert not journal.exists() and untimed(output) == untimed(whole)
    assert main([*ARGV, "--out", str(output)]) == 2  # the output exists now: never overwritten
    assert "exists" in capsys.readouterr().err


def test_a_journal_of_other_settings_is_refused_and_a_torn_line_dropped(
    tmp_path, monkeypatch, capsys, interrupt_long_job
):
    output = tmp_path / "audit.json"
    journal = tmp_path / "audit.json.partial.jsonl"
    restore = interrupt_long_job(2)
    assert main([*ARGV, "--out", str(output)]) == 130
    restore()
    kept = journal.read_bytes()
    capsys.readouterr()
    runs = audited(monkeypatch)
    assert main([*ARGV, "--seed", "1", "--out", str(output)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(journal) in err and "differ in: seed" in err and "--out" in err
    assert journal.read_bytes() == kept and not runs
    lines = kept.splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]) + lines[-1][:25])
    assert main([*ARGV, "--out", str(output)]) == 0
    assert "dropped a torn last line" in capsys.readouterr().err
    assert runs == ["dp-sgd", "client-dp"] and not journal.exists()


def test_help_says_that_nothing_is_kept_without_output(capsys):
    with pytest.raises(SystemExit):
        main(["audit", "privacy", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "FILE.partial.jsonl" in shown and "Without --out nothing is kept" in shown
