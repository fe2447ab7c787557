"""``stamen bench`` as a long job: finished units journaled, Ctrl-C keeps them, the same command resumes.

In-process through :func:`stamen.cli.main.main`: ``KeyboardInterrupt`` raised right after the
N-th unit is in the journal (as Ctrl-C or SIGTERM would arrive), the units' runs counted.
"""

import io
import json
import signal

import pytest

from stamen.benches import algorithms, dpsgd
from stamen.cli.main import main
from stamen.server.runlock import FolderLock

TINY = ["bench", "algorithms", "--datasets", "csbm", "--csbm-nodes", "300", "--partitioners", "louvain"]
TINY += ["--clients", "3", "--rounds", "2", "--algorithms", "fedavg,local", "--seeds", "0,1"]  # 4 units
JOURNAL = "algorithms.partial.jsonl"


def untimed(obj):
    """A record without what differs between two runs of one bench: timings, dates, provenance, command."""
    if isinstance(obj, dict):
        skip = ("date", "provenance", "command", "code", "machine")
        return {k: untimed(v) for k, v in obj.items() if "seconds" not in k and k not in skip}
    if isinstance(obj, list):
        return [untimed(v) for v in obj]
    return obj


def record(out, name="algorithms"):
    return untimed(json.loads((out / f"{name}.json").read_text()))


def count_calls(monkeypatch, module, name):
    original, calls = getattr(module, name), []

    def counted(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The reference: the bench of TINY run once, start to end."""
    out = tmp_path_factory.mktemp("whole")
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        assert main([*TINY, "--out", str(out)]) == 0
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    return out


def test_an_interrupted_bench_resumes_to_the_same_record(
    tmp_path, monkeypatch, capsys, uninterrupted, interrupt_long_job
):
    out = tmp_path / "out"
    restore = interrupt_long_job(2)
    runs = count_calls(monkeypatch, algorithms, "one_run")
    assert main([*TINY, "--out", str(out)]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("stamen bench: interrupted: kept 2 of 4 finished units in ")
    assert str(out / JOURNAL) in last and "resume with: stamen " in last
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [JOURNAL]  # no record, no table
    assert len((out / JOURNAL).read_text().splitlines()) == 1 + 2 and len(runs) == 2
    restore()
    runs.clear()
    assert main([*TINY, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "2 of 4 units kept from the journal; running the other 2" in err
    assert "[bench algorithms 4/4]" in err and "[bench algorithms 2/4]" not in err  # not a terminal: a line a unit
    assert [(values["algorithm"], values["seed"]) for values, *_ in runs] == [("fedavg", 1), ("local", 1)]
    assert not (out / JOURNAL).exists()  # the record holds all of it now
    assert record(out) == record(uninterrupted)
    assert (out / "algorithms.md").read_text().count("| fedavg |") == 1


def test_a_journal_of_other_settings_is_refused_and_left_as_it_is(tmp_path, monkeypatch, capsys, interrupt_long_job):
    out = tmp_path / "out"
    restore = interrupt_long_job(1)
    assert main([*TINY, "--out", str(out)]) == 130
    restore()
    journal = (out / JOURNAL).read_bytes()
    capsys.readouterr()
    runs = count_calls(monkeypatch, algorithms, "one_run")
    assert main([*TINY, "--seeds", "0,1,2", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stamen bench: error: ") and str(out / JOURNAL) in err
    assert "differ in: seeds" in err and "delete that file" in err and "another --out or --name" in err
    assert (out / JOURNAL).read_bytes() == journal and not runs and not (out / "algorithms.json").exists()


def test_a_torn_last_line_is_dropped_with_a_note(tmp_path, monkeypatch, capsys, uninterrupted, interrupt_long_job):
    out = tmp_path / "out"
    restore = interrupt_long_job(3)
    assert main([*TINY, "--out", str(out)]) == 130
    restore()
    path = out / JOURNAL
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:30])  # the last unit cut in mid-write
    capsys.readouterr()
    runs = count_calls(monkeypatch, algorithms, "one_run")
    assert main([*TINY, "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "dropped a torn last line" in err and "error" not in err
    assert len(runs) == 4 - 2
    assert record(out) == record(uninterrupted)


def test_a_damaged_line_before_the_last_is_refused(tmp_path, monkeypatch, capsys, interrupt_long_job):
    out = tmp_path / "out"
    restore = interrupt_long_job(2)
    assert main([*TINY, "--out", str(out)]) == 130
    restore()
    path = out / JOURNAL
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + b"{not json\n" + lines[2])
    capsys.readouterr()
    assert main([*TINY, "--out", str(out)]) == 2
    assert "is damaged at line 2" in capsys.readouterr().err


def test_a_second_writer_of_the_same_record_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    with FolderLock(out / "algorithms", "benchmark"):
        assert main([*TINY, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "benchmark" in err and "is being written by" in err
    assert not (out / JOURNAL).exists()


def test_another_bench_resumes_by_its_own_units(tmp_path, monkeypatch, capsys, interrupt_long_job):
    """dpsgd: a unit is a model; the kept model is not measured again."""
    argv = ["bench", "dpsgd", "--dataset", "csbm", "--csbm-nodes", "300", "--clients", "2", "--local-epochs", "1"]
    argv += ["--repeats", "1", "--dp-batch-size", "16", "--out", str(tmp_path)]
    restore = interrupt_long_job(1)
    measured = count_calls(monkeypatch, dpsgd, "model_cost")
    assert main(argv) == 130
    assert "kept 1 of 2 finished units" in capsys.readouterr().err
    restore()
    measured.clear()
    assert main(argv) == 0
    assert [model for _, model in measured] == ["mlp"]
    results = json.loads((tmp_path / "dpsgd.json").read_text())["results"]
    assert [r["model"] for r in results] == ["sgc", "mlp"] and all(r["steps"] > 0 for r in results)
    assert not (tmp_path / "dpsgd.partial.jsonl").exists()


def test_the_terminal_shows_the_units_and_the_time_left():
    from rich.console import Console

    from stamen.experiments.unit_progress import UnitProgress

    console = Console(file=io.StringIO(), force_terminal=True, width=150)
    with UnitProgress(console, "bench algorithms") as screen:
        screen.begin(10, 3)
        screen.finished("fedavg, csbm, louvain, seed 0: 1 s")
        screen.progress.refresh()
    text = console.file.getvalue()
    assert "3 of 10 units kept from the journal" in text
    assert "4/10" in text and "units" in text and "left" in text
