"""OS errors through the real CLI: one line naming the path, the cause and what to do; never a traceback.

Read-only and full folders are small tmpfs mounts made for the test (root only: the
permission bits of a folder do not stop root, a read-only or full file system does);
elsewhere the tests skip, saying why.
"""

import contextlib
import ctypes
import errno
import json
import os
from pathlib import Path

import pytest

from stamen.cli.main import main as stamen

FEDERATION = ["--federation-config", "num-supernodes=3"]
SMALL = "csbm-nodes=300 local-epochs=1"
_MS_RDONLY, _MS_REMOUNT, _MNT_DETACH = 1, 32, 2


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(target: Path, size: str, read_only: bool = False, remount: bool = False) -> None:
    flags = (_MS_RDONLY if read_only else 0) | (_MS_REMOUNT if remount else 0)
    if _libc().mount(b"tmpfs", str(target).encode(), b"tmpfs", flags, f"size={size}".encode()) != 0:
        code = ctypes.get_errno()
        pytest.skip(
            f"cannot mount a tmpfs at {target} ({errno.errorcode.get(code, code)}): needs root in a mount namespace"
        )


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    if os.geteuid() != 0:
        pytest.skip("needs root: a read-only or full file system is made with a tmpfs mount")
    path.mkdir(parents=True, exist_ok=True)
    _mount(path, size)
    try:
        yield path
    finally:
        _libc().umount2(str(path).encode(), _MNT_DETACH)


def _one_line(capsys) -> list[str]:
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err


def _run(config: str) -> int:
    return stamen(["run", "--engine", "inprocess", "--quiet", *FEDERATION, "-c", f"{SMALL} {config}"])


def test_a_read_only_output_cache_or_plot_folder_is_one_line(tmp_path, capsys, monkeypatch):
    assert _run(f"num-server-rounds=2 output-dir='{tmp_path / 'runs'}' run-name='r'") == 0
    with tmpfs(tmp_path / "ro", "1m") as ro:
        (ro / "old").mkdir()
        _mount(ro, "1m", read_only=True, remount=True)
        capsys.readouterr()
        assert _run(f"num-server-rounds=2 output-dir='{ro}'") == 2
        assert "is not writable; choose a writable folder" in _one_line(capsys)[0]
        assert stamen(["compare", str(tmp_path / "runs" / "r"), "--plot", str(ro / "x.png")]) == 4  # the machine's
        (line,) = _one_line(capsys)
        assert f"{ro / 'x.png'}: " in line and "Read-only file system; that file system is read-only" in line
        monkeypatch.setenv("STAMEN_CACHE", str(ro / "cache"))
        assert _run(f"num-server-rounds=2 seed=7 output-dir='{tmp_path / 'runs'}'") == 4  # a partition not cached yet
        (line,) = _one_line(capsys)
        assert str(ro / "cache") in line and "read-only" in line
        assert sorted(p.name for p in ro.iterdir()) == ["old"]


def test_a_disk_that_fills_mid_run_fails_cleanly_and_resumes(tmp_path, capsys):
    with tmpfs(tmp_path / "full", "200k") as full:
        assert _run(f"num-server-rounds=300 output-dir='{full}' run-name='r'") == 4  # the environment failed
        (line,) = _one_line(capsys)
        assert "No space left on device" in line and str(full / "r") in line
        assert "free some space" in line and f"resume-from='{full / 'r'}'" in line  # what to do, how to go on
        run = full / "r"
        status = json.loads((run / "status.json").read_text())
        assert status["status"] == "failed" and "No space left on device" in status["error"]
        rows = [
            json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines(keepends=True) if x.endswith("\n")
        ]
        assert [row["round"] for row in rows] == list(range(len(rows))) and len(rows) > 5
        _mount(full, "20m", remount=True)  # space freed: the run resumes from its last checkpoint and finishes
        assert _run(f"num-server-rounds=300 resume-from='{run}'") == 0
        rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        assert [row["round"] for row in rows] == list(range(301))
        assert json.loads((run / "status.json").read_text())["status"] == "finished"


def test_a_disk_that_fills_at_the_final_write_leaves_no_running_status_and_exits_4(tmp_path, capsys, monkeypatch):
    from stamen.server import rundir

    atomic_write = rundir.atomic_write
    full = {"now": False}

    def filling(path, data):
        if path.name == "summary.json":
            full["now"] = True  # the rounds are done: the disk fills as the results are written
        if full["now"] and path.name in ("summary.json", "status.json"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        atomic_write(path, data)

    monkeypatch.setattr(rundir, "atomic_write", filling)
    assert _run(f"num-server-rounds=2 output-dir='{tmp_path}' run-name='r'") == 4
    (line,) = _one_line(capsys)
    assert line.startswith("stamen run: failed: ") and "No space left on device" in line, line
    assert "free some space" in line and f"resume-from='{tmp_path / 'r'}'" in line
    status = json.loads((tmp_path / "r" / "status.json").read_text())  # written where the old record lay
    assert status["status"] == "failed" and status["cause"] == "environment", status
    assert "No space left on device" in status["error"] and status.get("token")
