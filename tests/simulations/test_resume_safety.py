"""A resume never loses a row: everything it reads is checked before it writes, through the real CLI.

Each case starts from a finished in-process run, damages or stops it the way a crash, a
careless hand or a hostile one would, and resumes it with ``stamen run -c resume-from=...``.
A resume it can carry out ends with the rows an uninterrupted run has; one it must refuse
exits 2 with one line and leaves every file byte for byte as it was.
"""

import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from stamen.cli.main import main as stamen

ROUNDS = 4
CONFIG = "csbm-nodes=300 local-epochs=2 keep-optimizer-state=false"
FEDERATION = ["--federation-config", "num-supernodes=3"]
_TIMING = ("seconds", "devices", "process")


def _run(*config: str) -> int:
    return stamen(["run", "--engine", "inprocess", "--quiet", *FEDERATION, "-c", " ".join(config)])


def _rows(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if not any(t in k for t in _TIMING)} for row in rows]


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("resume-safety")
    assert _run(CONFIG, f"num-server-rounds={ROUNDS} output-dir='{runs}' run-name='whole'") == 0
    return runs / "whole"


@pytest.fixture
def stopped(finished, tmp_path) -> Path:
    """A copy of the finished run as a crash right after its last checkpoint leaves it: status running, no last row."""
    run_dir = tmp_path / "stopped"
    shutil.copytree(finished, run_dir)
    status = json.loads((run_dir / "status.json").read_text())
    (run_dir / "status.json").write_text(json.dumps({**status, "status": "running"}))
    lines = (run_dir / "metrics.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "metrics.jsonl").write_text("".join(lines[:-1]))
    (run_dir / "summary.json").unlink()
    return run_dir


def _resume(run_dir: Path, rounds: int = ROUNDS) -> int:
    return _run(CONFIG, f"num-server-rounds={rounds} resume-from='{run_dir}'")


def test_a_run_stopped_after_its_last_checkpoint_is_completed(finished, stopped):
    assert _resume(stopped) == 0
    assert _rows(stopped) == _rows(finished)
    assert json.loads((stopped / "status.json").read_text())["status"] == "finished"
    summary = json.loads((stopped / "summary.json").read_text())
    assert summary["final"] == json.loads((finished / "summary.json").read_text())["final"]


def test_a_torn_last_row_is_run_again(finished, stopped):
    with open(stopped / "metrics.jsonl", "a") as stream:
        stream.write('{"round": 4, "clients": 3, "train_lo')  # the write the crash cut short
    assert _resume(stopped) == 0
    assert _rows(stopped) == _rows(finished)


def _checkpoint_with(run_dir: Path, edit) -> None:
    """Rewrite ``checkpoint.npz`` with ``edit(entries, meta)`` applied (a consistent file, other content)."""
    with np.load(run_dir / "checkpoint.npz", allow_pickle=False) as stored:
        entries = {name: stored[name] for name in stored.files}
    meta = json.loads(entries["meta"].tobytes().decode())
    edit(entries, meta)
    entries["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **entries)
    (run_dir / "checkpoint.npz").write_bytes(buffer.getvalue())
    assert zipfile.is_zipfile(run_dir / "checkpoint.npz")


def _wrong_shape(entries, meta) -> None:
    entries["weight/0"] = np.zeros((2, 2), dtype=entries["weight/0"].dtype)


def _bad_sampler(entries, meta) -> None:
    meta["sampler_state"] = [3, [1, 2, 3], None]


REFUSALS = {
    "weights of another shape": (_wrong_shape, ROUNDS, "do not fit the run's model"),
    "a malformed sampler state": (_bad_sampler, ROUNDS, "sampler state is malformed"),
    "fewer rounds than the checkpoint": (None, ROUNDS - 1, f"beyond num-server-rounds={ROUNDS - 1}"),
    "a missing row before the checkpoint": ("drop row 2", ROUNDS, "found rounds 0-1, 3"),
    "a row without its round": ("no round", ROUNDS, "line 2 is not a round's row"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_resume_that_cannot_be_carried_out_changes_nothing(stopped, case, capsys):
    edit, rounds, message = REFUSALS[case]
    metrics = stopped / "metrics.jsonl"
    if callable(edit):
        _checkpoint_with(stopped, edit)
    elif edit == "drop row 2":
        lines = metrics.read_text().splitlines(keepends=True)
        metrics.write_text("".join(lines[:2] + lines[3:]))
    elif edit == "no round":
        lines = metrics.read_text().splitlines(keepends=True)
        metrics.write_text("".join(lines[:1] + ['{"clients": 3}\n'] + lines[2:]))
    before = _files(stopped)
    capsys.readouterr()
    assert _resume(stopped, rounds) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert _files(stopped) == before
