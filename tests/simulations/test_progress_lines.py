"""``stamen run``'s progress outside a terminal: plain lines (round r/N, the figure, elapsed, ETA), no escape
codes, none with ``--quiet``; on a terminal the rich bar as before."""

import io
import json
import re
from pathlib import Path

import pytest

from stamen.cli.main import main as stamen
from stamen.simulations.progress import LINE_INTERVAL, RunProgress, clock

LINE = re.compile(r"^round (\d+)/(\d+), test acc \d\.\d{3}, elapsed \d+:\d\d:\d\d, ETA (\d+:\d\d:\d\d|-)$")


def _run(tmp_path: Path, rounds: int, *flags: str) -> int:
    """``stamen run`` in process on a tiny graph, its stderr captured (not a terminal)."""
    items = f"num-server-rounds={rounds} csbm-nodes=60 output-dir='{tmp_path}' run-name='r'"
    return stamen(["run", "--engine", "inprocess", "--clients", "2", *flags, "-c", items])


def test_a_piped_run_prints_plain_progress_lines(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(RunProgress, "interval", 0.0)  # a line at every poll of the run's rows
    code = _run(tmp_path, 200)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "\x1b" not in err and "\r" not in err
    lines = [line for line in err.splitlines() if line.startswith("round ")]
    assert len(lines) >= 2, err
    assert all(LINE.match(line) for line in lines), lines
    rounds = [int(LINE.match(line).group(1)) for line in lines]
    assert rounds == sorted(rounds) and rounds[-1] == 200 and lines[-1].endswith("ETA 0:00:00")
    assert {int(LINE.match(line).group(2)) for line in lines} == {200}


def test_quiet_prints_no_progress_lines(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(RunProgress, "interval", 0.0)
    code = _run(tmp_path, 5, "--quiet")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert not [line for line in (captured.err + captured.out).splitlines() if line.startswith("round ")]


def _rows(path: Path, rounds: range) -> None:
    with open(path / "metrics.jsonl", "a") as file:
        for r in rounds:
            file.write(json.dumps({"round": r, "clients": 2, "test_acc": 0.5 + r / 100}) + "\n")


def test_the_first_line_comes_with_the_first_row_then_one_per_interval(capsys, tmp_path):
    progress = RunProgress(tmp_path, 10, interval=LINE_INTERVAL)
    progress.terminal = False  # what __enter__ finds outside a terminal
    progress.update()  # no row yet: no line
    _rows(tmp_path, range(0, 2))
    progress.update()
    _rows(tmp_path, range(2, 5))
    progress.update()  # within the interval: no second line
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("round 1/10, test acc 0.510, elapsed 0:00:0"), lines
    progress._printed = (progress._printed[0] - LINE_INTERVAL, 1)  # the interval has passed
    progress.update()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("round 4/10, test acc 0.540"), lines


def test_a_terminal_shows_the_bar_and_no_lines(capsys, tmp_path, monkeypatch):
    from rich.console import Console

    from stamen.simulations import progress as progress_module

    console = Console(file=io.StringIO(), force_terminal=True, width=150)
    monkeypatch.setattr(progress_module, "output_console", lambda stderr=False: console)
    _rows(tmp_path, range(0, 6))
    with RunProgress(tmp_path, 10) as progress:
        progress.update()
        progress.progress.refresh()
    assert "5/10" in console.file.getvalue() and "test acc 0.550" in console.file.getvalue()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("seconds", "text"), [(0, "0:00:00"), (59.6, "0:01:00"), (3725, "1:02:05")])
def test_clock(seconds, text):
    assert clock(seconds) == text


def test_units_outside_a_terminal_get_a_line_each_and_one_while_a_unit_runs():
    import time

    from rich.console import Console

    from stamen.experiments.unit_progress import UnitProgress

    console = Console(file=io.StringIO(), width=200)  # not a terminal
    with UnitProgress(console, "sweep", interval=0.05) as screen:
        screen.begin(3, 0)
        deadline = time.monotonic() + 10
        while "working" not in console.file.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        screen.finished("r0 finished")
    lines = console.file.getvalue().splitlines()
    assert any(line.startswith("[sweep 0/3] working; ") for line in lines), lines
    assert any(line.startswith("[sweep 1/3] r0 finished; ") and line.endswith(" left") for line in lines), lines
    assert "\x1b" not in console.file.getvalue() and "\r" not in console.file.getvalue()


def test_units_not_enabled_show_nothing():
    from rich.console import Console

    from stamen.experiments.unit_progress import UnitProgress

    console = Console(file=io.StringIO(), width=200)
    with UnitProgress(console, "sweep", enabled=False, interval=0.0) as screen:
        screen.begin(2, 1)
        screen.finished("r1 finished")
    assert console.file.getvalue() == ""
