"""``stamen certify`` as a long job: finished units journaled, Ctrl-C keeps them, the same command resumes.

In-process through :func:`stamen.cli.main.main` (the exit codes and one-line messages of the
CLI), interrupted for real: ``KeyboardInterrupt`` raised right after the N-th unit was
journaled, or SIGINT to a subprocess once its journal holds N units.
"""

import io
import json
import signal
import subprocess
import sys
import time

import pytest

from stamen.certify.journal import JOURNAL_FILE, Journal
from stamen.cli.main import main

SMALL = ["certify", "--dataset", "csbm-paper", "--csbm-nodes", "40", "--labeled-per-class", "4", "--targets", "6"]
SMALL += ["--budgets", "0,1", "--C", "0.5", "--search", "milp", "--no-screen"]  # every target needs a MILP
SMALL += ["--workers", "1"]  # in this process, where milp_models counts the MILPs built
TWO_ARCHS = [*SMALL, "--arch", "gcn,sgc"]  # 12 units


def _untimed(obj):
    """certificate.json without what may differ between two runs of one job: timings, provenance, command."""
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if "seconds" not in k and k not in ("provenance", "command")}
    if isinstance(obj, list):
        return [_untimed(v) for v in obj]
    return obj


def _certificate(folder):
    return _untimed(json.loads((folder / "certificate.json").read_text()))


def _report_without_timings(folder):
    """report.md without the median/max seconds columns and the command line."""
    lines = []
    for line in (folder / "report.md").read_text().splitlines():
        if line.startswith("- command:"):
            continue
        cells = line.split("|")
        if len(cells) == 9:  # | k | acc | ratio | unknown | median s | max s | needed MILP |
            del cells[5:7]
        lines.append("|".join(cells))
    return lines


def _interrupt_after(monkeypatch, units, method="add_target"):
    """Ctrl-C right after the ``units``-th unit is in the journal."""
    original = getattr(Journal, method)
    calls = []

    def add(self, *args):
        original(self, *args)
        calls.append(1)
        if len(calls) == units:
            raise KeyboardInterrupt

    monkeypatch.setattr(Journal, method, add)
    return lambda: monkeypatch.setattr(Journal, method, original)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The reference: the job of TWO_ARCHS run once, start to end."""
    out = tmp_path_factory.mktemp("whole") / "out"
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        assert main([*TWO_ARCHS, "--out", str(out)]) == 0
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    return out


def test_two_workers_give_the_same_certificate(tmp_path, uninterrupted):
    out = tmp_path / "out"
    assert main([*TWO_ARCHS, "--workers", "2", "--out", str(out)]) == 0
    assert _certificate(out) == _certificate(uninterrupted)
    assert _report_without_timings(out) == _report_without_timings(uninterrupted)
    assert not (out / JOURNAL_FILE).exists()


def test_an_interrupted_certification_resumes_to_the_same_outputs(
    tmp_path, monkeypatch, capsys, uninterrupted, milp_models
):
    out = tmp_path / "out"
    restore = _interrupt_after(monkeypatch, 8)  # gcn's 6 targets and 2 of sgc's
    built = milp_models
    assert main([*TWO_ARCHS, "--out", str(out)]) == 130
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("stamen certify: interrupted: kept 8 of 12 finished units")
    assert "resume with: stamen certify" in last and str(out / JOURNAL_FILE) in last
    assert sorted(p.name for p in out.iterdir()) == [JOURNAL_FILE]  # nothing written after the interrupt
    assert len((out / JOURNAL_FILE).read_text().splitlines()) == 1 + 8
    # not a terminal: one line per stage, no bar
    assert err.count("stamen certify: gcn: kernel over") == 1 and err.count("certifying 6 of 6 targets") == 2
    assert len(built) == 8
    restore()
    built.clear()
    assert main([*TWO_ARCHS, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "certifying 0 of 6 targets (6 kept from the journal)" in err
    assert "certifying 4 of 6 targets (2 kept from the journal)" in err
    assert len(built) == 4  # the 8 journaled targets are not solved again
    assert not (out / JOURNAL_FILE).exists()  # the outputs hold all of it now
    assert _certificate(out) == _certificate(uninterrupted)
    assert _report_without_timings(out) == _report_without_timings(uninterrupted)
    assert (out / "certified_accuracy.png").read_bytes() == (uninterrupted / "certified_accuracy.png").read_bytes()


def test_a_collective_certification_resumes_budget_by_budget(tmp_path, monkeypatch, capsys):
    command = [*SMALL[:-3], "--budgets", "0,1,2,3", "--mode", "collective"]
    whole = tmp_path / "whole"
    assert main([*command, "--out", str(whole)]) == 0
    out = tmp_path / "out"
    restore = _interrupt_after(monkeypatch, 2, "add_budget")
    assert main([*command, "--out", str(out)]) == 130
    assert "kept 2 of 4 finished units (budgets)" in capsys.readouterr().err
    restore()
    assert main([*command, "--out", str(out)]) == 0
    assert "certifying 2 of 4 budgets (2 kept from the journal)" in capsys.readouterr().err
    assert _certificate(out) == _certificate(whole)


def test_a_journal_of_another_job_is_refused(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    restore = _interrupt_after(monkeypatch, 2)
    assert main([*SMALL, "--out", str(out)]) == 130
    restore()
    journal = (out / JOURNAL_FILE).read_bytes()
    capsys.readouterr()
    assert main([*SMALL, "--budgets", "0,2", "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == "stamen certify: loading csbm-paper" and len(lines) == 2, lines  # the stage, the refusal
    err = lines[1]
    assert err.startswith("stamen certify: error: ") and str(out / JOURNAL_FILE) in err
    assert "budgets" in err and "another --out" in err and "delete" in err
    assert (out / JOURNAL_FILE).read_bytes() == journal  # left as it was
    assert main([*SMALL, "--seed", "1", "--out", str(out)]) == 2  # another graph and split: refused too
    assert "seed" in capsys.readouterr().err


def test_a_torn_last_line_is_dropped_with_a_note(tmp_path, monkeypatch, capsys, milp_models):
    out = tmp_path / "out"
    restore = _interrupt_after(monkeypatch, 3)
    assert main([*SMALL, "--out", str(out)]) == 130
    restore()
    path = out / JOURNAL_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # the last unit cut in mid-write
    capsys.readouterr()
    built = milp_models
    built.clear()  # count the resume's models only
    assert main([*SMALL, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "dropped a torn last line" in err and "error" not in err
    assert len(built) == 6 - 2
    whole = tmp_path / "whole"
    assert main([*SMALL, "--out", str(whole)]) == 0
    assert _certificate(out) == _certificate(whole)


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_a_bad_out_is_refused_before_the_graph_is_loaded(tmp_path, monkeypatch, capsys, where):
    from stamen.cli.commands import certify as command

    def never(*_):
        raise AssertionError("the graph was loaded before --out was checked")

    monkeypatch.setattr(command, "_load_instance", never)
    (tmp_path / "f").write_text("x")
    out = tmp_path / "f" if where == "file" else tmp_path / "f" / "sub" / "out"
    assert main([*SMALL, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "not a folder" in err


def test_the_terminal_shows_the_stage_the_units_and_the_time_left():
    from rich.console import Console

    from stamen.certify.pipeline import Stage
    from stamen.experiments.certify_progress import CertifyProgress

    console = Console(file=io.StringIO(), force_terminal=True, width=150)
    with CertifyProgress(console) as screen:
        screen.begin("gcn", 10, 3, "targets", 2995)
        screen.stage(Stage.KERNEL)
        screen.progress.refresh()
        assert "gcn: kernel over 2995 nodes" in console.file.getvalue()
        screen.stage(Stage.CERTIFY)
        screen.advance()
        screen.progress.refresh()
    text = console.file.getvalue()
    assert "4/10" in text and "targets" in text and "left" in text


@pytest.mark.slow
def test_sigint_to_a_running_certification_keeps_its_units(tmp_path, uninterrupted):
    """A real Ctrl-C (SIGINT to the process) once the journal holds 3 units; the same command resumes."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "stamen.cli.main", *TWO_ARCHS, "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = out / JOURNAL_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and len(journal.read_bytes().splitlines()) >= 1 + 3:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the job ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert time.monotonic() - started < 20
    kept = len(journal.read_bytes().splitlines()) - 1
    assert 3 <= kept < 12 and f"kept {kept} of 12 finished units" in err.strip().splitlines()[-1]
    assert not (out / "certificate.json").exists()
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "kept from the journal" in resumed.stderr
    assert _certificate(out) == _certificate(uninterrupted)


def test_a_journal_of_the_previous_version_keeps_its_digest():
    # What the journal recorded before the options were declared in the contract (argparse's
    # namespace, taken from that version for this command line): the same job must resume.
    from stamen.contract.certify_config import CertifyConfig
    from stamen.experiments.certify_job import job_options

    previous = {
        "C": 0.1, "arch": ["gcn"], "attacker": "all labels", "attacker_client": None, "binary_features": False,
        "budgets": [1, 2], "classes": "all", "clients": 3, "csbm_nodes": 200, "dataset": "cora_ml", "decide": False,
        "depth": 1, "enumerate_limit": 20000, "labeled_per_class": 10, "method": "enumerate", "mode": "samplewise",
        "model": "svm", "no_screen": False, "normalization": None, "ntk_variant": "textbook", "partition": "random",
        "renamed_method": None, "renamed_partition": None, "ridge": 1.0, "seed": 0, "solver": "highs",
        "targets": 50, "time_limit": 60.0,
    }  # fmt: skip
    config = CertifyConfig.from_values(
        {"out": "/tmp/unused", "dataset": "cora_ml", "classes": "all", "budgets": "2,1", "targets": 50,
         "search": "enumerate", "partitioner": "random", "clients": 3}
    )  # fmt: skip
    assert job_options(config) == previous
