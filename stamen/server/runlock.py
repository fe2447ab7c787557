"""One writer per folder: an OS lock held for the whole life of whatever writes into it.

A run directory (and a sweep's folder, a deployment's workdir, a certification's output
folder) has at most one writer. The writer holds an exclusive ``flock`` on a lock file
*beside* the folder, ``<parent>/.<name>.lock``, from before its first check of the folder
until after its last write. The lock file sits outside the folder so that it can be taken
before the folder exists (two runs started at once with one ``run-name`` race for it, not
for ``mkdir``) and so that an overwrite, which empties the folder, never touches it. It
holds one JSON line naming the holder: the command line, the pid, the start time and the
run token (:data:`TOKEN_ENV`).

Properties, all from the kernel's ``flock``:

- a second writer is refused at once (:class:`FolderLocked`, a one-line
  ``FileExistsError`` naming the holder: the CLI's exit 2);
- a holder that died, ``kill -9`` included, holds nothing: the kernel drops its lock with
  its last file descriptor, so the next writer takes it over with no stale-lock guess
  (the dead holder's line is simply overwritten);
- the descriptor is not inherited across ``exec``: the processes a command starts do
  not keep its lock after it is gone.

A command that starts a run holds the lock *for* the run's ServerApp, which may be
another process (Flower's ``flwr-serverapp``) or the same one (the in-process engine):
the ServerApp then finds the lock held by the token it was handed
(``STAMEN_RUN_TOKEN``) and writes under its command's lock (:meth:`FolderLock.held_for_us`).
A ServerApp started by plain ``flwr run`` or in a deployment takes the lock itself.

The lock files are Stamen's: one small hidden file per folder ever written, never removed
(removing a lock file while another process waits on it would let two writers in).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

LOCK_SUFFIX = ".lock"
# The environment variable through which a command hands its run a token (:func:`stamen.server.rundir.run_token`).
TOKEN_ENV = "STAMEN_RUN_TOKEN"


class FolderLocked(FileExistsError):
    """Another live process holds the folder's lock; the message names it and what to do."""


def lock_path(folder: Path) -> Path:
    """The lock file of ``folder``: ``<parent>/.<name>.lock``."""
    folder = Path(folder).expanduser().absolute()
    return folder.parent / f".{folder.name}{LOCK_SUFFIX}"


def holder_text(holder: dict[str, Any]) -> str:
    """``stamen run ... (pid 123, since 2026-12-01 21:05:04)`` from a lock file's line."""
    command = holder.get("command") or "another Stamen process"
    pid = holder.get("pid", "?")
    since = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since)) if isinstance(since, int | float) else "?"
    return f"`{command}` (pid {pid}, since {when})"


class FolderLock:
    """The exclusive lock of one folder (see the module docstring); a context manager.

    ``what`` names the folder in the refusal (``run directory``, ``sweep folder``, ...).
    """

    def __init__(self, folder: str | Path, what: str = "run directory") -> None:
        self.folder = Path(folder).expanduser().absolute()
        self.path = lock_path(self.folder)
        self.what = what
        self._fd: int | None = None

    # -- taking and giving back -------------------------------------------------------------
    def acquire(self) -> None:
        """Take the lock or raise :class:`FolderLocked` at once; never waits.

        The folder's parent is created if missing (it passed its checks before this call).
        """
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_symlink():
            raise FolderLocked(f"{self.path} is a symbolic link; Stamen keeps its lock files as plain files")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FolderLocked(self.refusal()) from None
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._write_holder()

    def release(self) -> None:
        """Give the lock back (the lock file stays; see the module docstring)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> FolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # -- the holder -------------------------------------------------------------------------
    def holder(self) -> dict[str, Any]:
        """The holder's line of the lock file (empty if none could be read)."""
        try:
            text = self.path.read_text()
        except OSError:
            return {}
        with contextlib.suppress(ValueError):
            value = json.loads(text)
            if isinstance(value, dict):
                return value
        return {}

    def refusal(self) -> str:
        return (
            f"{self.what} {self.folder} is being written by {holder_text(self.holder())}; "
            f"wait for it to end (or stop it), or choose another folder"
        )

    def held_for_us(self) -> bool:
        """True when the lock is held by the command that handed this process its run token."""
        token = os.environ.get(TOKEN_ENV)
        return bool(token) and self.holder().get("token") == token

    def _write_holder(self) -> None:
        assert self._fd is not None
        line = json.dumps(
            {
                "command": _command_line(),
                "pid": os.getpid(),
                "started": time.time(),
                "token": os.environ.get(TOKEN_ENV),
            }
        )
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, (line + "\n").encode(), 0)
        os.fsync(self._fd)


def _command_line() -> str:
    """This process's command line as its user typed it (``python -m stamen.cli.main`` is ``stamen``)."""
    if not sys.argv or not sys.argv[0]:
        return ""
    program = Path(sys.argv[0]).name
    return " ".join(["stamen" if program == "cli.py" else program, *sys.argv[1:]])


@contextlib.contextmanager
def writer_of(folder: str | Path, what: str = "run directory"):  # a context manager
    """Hold ``folder``'s lock for the block, unless this process's command already holds it for us.

    Raises :class:`FolderLocked` when another writer holds it.
    """
    lock = FolderLock(folder, what)
    try:
        lock.acquire()
    except FolderLocked:
        if not lock.held_for_us():
            raise
    try:
        yield lock
    finally:
        lock.release()
