"""One writer per run directory: the OS lock, its refusal, its take-over after a holder died."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stamen.server.runlock import TOKEN_ENV, FolderLock, FolderLocked, lock_path, writer_of

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_writer_is_refused_with_the_holder_named(tmp_path):
    run = tmp_path / "runs" / "r"
    with FolderLock(run) as first:
        assert first.held and lock_path(run) == tmp_path / "runs" / ".r.lock"
        with pytest.raises(FolderLocked, match=rf"run directory {run} is being written by `.*` \(pid {os.getpid()}, "):
            FolderLock(run).acquire()
        assert not run.exists()  # the lock sits beside the folder: taking it creates no run directory
    with FolderLock(run, "sweep folder"):  # given back: the next writer takes it
        pass


def test_a_lock_whose_holder_is_gone_is_taken_over(tmp_path):
    run = tmp_path / "r"
    stale = FolderLock(run)
    stale.acquire()
    stale._fd, fd = None, stale._fd  # what a killed holder leaves: its line, and no open descriptor
    os.close(fd)
    assert stale.holder()["pid"] == os.getpid()
    with FolderLock(run) as taker:
        assert taker.held


def test_the_command_holds_the_lock_for_its_run(tmp_path, monkeypatch):
    run = tmp_path / "r"
    monkeypatch.setenv(TOKEN_ENV, "token-of-my-command")
    with FolderLock(run):
        with writer_of(run) as inner:  # the ServerApp the command started, handed its token
            assert not inner.held
        monkeypatch.setenv(TOKEN_ENV, "another-command")
        with pytest.raises(FolderLocked):
            with writer_of(run):
                pass
    monkeypatch.delenv(TOKEN_ENV)
    with writer_of(run) as alone:  # a ServerApp of plain `flwr run`: takes the lock itself
        assert alone.held


def test_a_symlink_in_place_of_the_lock_file_is_refused(tmp_path):
    (tmp_path / "elsewhere").write_text("mine")
    os.symlink(tmp_path / "elsewhere", tmp_path / ".r.lock")
    with pytest.raises(FolderLocked, match="symbolic link"):
        FolderLock(tmp_path / "r").acquire()
    assert (tmp_path / "elsewhere").read_text() == "mine"


@pytest.mark.slow
def test_kill_9_of_the_holder_frees_the_lock(tmp_path):
    run = tmp_path / "r"
    code = (
        f"from stamen.server.runlock import FolderLock; lock = FolderLock({str(run)!r}); lock.acquire(); "
        "print('held', flush=True); input()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(FolderLocked, match=f"pid {holder.pid}"):
            FolderLock(run).acquire()
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        deadline = time.monotonic() + 5
        while True:  # the kernel drops the lock with the process
            try:
                with FolderLock(run):
                    break
            except FolderLocked:
                assert time.monotonic() < deadline, "the lock of a killed holder was not released"
                time.sleep(0.05)
        assert json.loads(lock_path(run).read_text())["pid"] == os.getpid()  # the dead holder's line replaced
    finally:
        holder.kill()


def test_a_generated_run_name_taken_a_moment_ago_is_not_given_again(tmp_path):
    from stamen.contract.run_config import RunConfig
    from stamen.server.rundir import RunDirectory

    config = RunConfig(output_dir=str(tmp_path))
    first = RunDirectory.plan(config)
    with FolderLock(first.path):  # started, its folder not made yet
        second = RunDirectory.plan(config)
    assert second.path != first.path and not first.path.exists()
