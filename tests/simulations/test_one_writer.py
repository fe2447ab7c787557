"""One writer per run directory, through the real ``stamen`` entry point.

While a run directory is being written (its lock held), an overwrite, a resume, a second
run of the same name, an unlearning request and a second sweep of the same name are each
refused with one line naming the holder and exit 2, and leave every file as it was.
"""

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stamen.cli.main import main as stamen
from stamen.server.runlock import FolderLock

SMALL = "num-server-rounds=2 csbm-nodes=300"
FEDERATION = ["--federation-config", "num-supernodes=3"]


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished in-process run, ``runs/r``."""
    runs = tmp_path_factory.mktemp("one-writer") / "runs"
    code = stamen(
        ["run", "--engine", "inprocess", "--quiet", *FEDERATION, "-c", f"{SMALL} output-dir='{runs}' run-name='r'"]
    )
    assert code == 0
    return runs / "r"


CASES = {
    "overwrite": [
        "run",
        "--engine",
        "inprocess",
        *FEDERATION,
        "-c",
        SMALL + " output-dir='{runs}' run-name='r' overwrite=true",
    ],
    "overwrite on flower": ["run", *FEDERATION, "-c", SMALL + " output-dir='{runs}' run-name='r' overwrite=true"],
    "resume": [
        "run",
        "--engine",
        "inprocess",
        *FEDERATION,
        "-c",
        "num-server-rounds=4 csbm-nodes=300 resume-from='{run}'",
    ],
    "unlearn": ["unlearn", "{run}", "--request", "client:0"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_second_writer_is_refused_and_changes_nothing(case, finished, capsys):
    before = _files(finished)
    args = [a.format(runs=finished.parent, run=finished) for a in CASES[case]]
    with FolderLock(finished):  # what a running `stamen run` holds
        started = time.monotonic()
        code = stamen(args)
        took = time.monotonic() - started
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and f"run directory {finished} is being written by `" in err[0], err
    assert f"(pid {os.getpid()}, since " in err[0]
    assert _files(finished) == before
    assert took < 30  # refused before any slow work (no Flower start, no training)


def test_a_second_sweep_of_one_name_is_refused(tmp_path, capsys):
    folder = tmp_path / "sweeps" / "s"
    with FolderLock(folder, "sweep folder"):
        code = stamen(["sweep", "--name", "s", "--out", str(tmp_path / "sweeps"), "--engine", "inprocess", "-c", SMALL])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"sweep folder {folder} is being written by" in err[0], err
    assert not folder.exists()


@pytest.mark.slow
def test_an_overwrite_during_a_real_run_leaves_its_rows_whole(tmp_path):
    """Two real commands: the second is refused while the first runs; the first's rows are its own, in order."""
    runs = tmp_path / "runs"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # long enough that the second command (a fresh interpreter importing torch) finds it running on any
    # machine: 400 rounds once ended first on an idle one (the overwrite then went ahead, rightly)
    config = f"num-server-rounds=2000 csbm-nodes=300 output-dir='{runs}' run-name='r'"
    command = [sys.executable, "-m", "stamen.cli.main", "run", "--engine", "inprocess", "--quiet", *FEDERATION]
    first = subprocess.Popen([*command, "-c", config], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        metrics = runs / "r" / "metrics.jsonl"
        deadline = time.monotonic() + 120
        while not (metrics.is_file() and metrics.read_text().count("\n") >= 3):
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not get going"
            time.sleep(0.1)
        second = subprocess.run(
            [*command, "-c", config + " overwrite=true"], env=env, capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 2 and "is being written by" in second.stderr, second.stderr
        assert first.wait(timeout=300) == 0, first.stderr.read()
    finally:
        first.kill()
    rounds = [json.loads(line)["round"] for line in metrics.read_text().splitlines()]
    assert rounds == list(range(2001))
    summary = json.loads((runs / "r" / "summary.json").read_text())
    assert summary["rounds"] == 2000 and summary["best_round"] <= 2000
