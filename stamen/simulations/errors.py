"""What a command reports besides bad input (``ValueError`` and friends: exit 2)."""

from __future__ import annotations

import errno

# What to do about an OS error, by its errno (the rest: the error's own words).
_ADVICE = {
    errno.EACCES: "check its permissions, or choose another folder",
    errno.EPERM: "check its permissions, or choose another folder",
    errno.EROFS: "that file system is read-only: choose a writable folder",
    errno.ENOSPC: "the disk is full: free some space, or choose a folder on another disk (finished rounds are kept)",
    errno.EDQUOT: "the disk quota is used up: free some space, or choose a folder on another disk",
    errno.EADDRINUSE: "another program uses that port: stop it, or choose another port",
    errno.ENOENT: "no such file or folder: check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
    errno.EISDIR: "that is a folder, not a file: check the path",
    errno.ELOOP: "that is a symbolic link, which Stamen does not write through: choose a real file or folder",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n) or run fewer jobs at once",
}


class RunFailed(RuntimeError):
    """A run that started and did not finish: exit 1, with the reason and where the logs are."""


class RunInterrupted(RuntimeError):
    """Ctrl-C or SIGTERM stopped a run (after every process of it was stopped): exit 130."""


def one_line(error: BaseException) -> str:
    """An error's message on one line, as a command prints it after ``error:``."""
    return " ".join(str(error).split())


def os_error_line(error: OSError) -> str:
    """An OS error as one line: which path, which cause, what to do.

    Stamen's own ``FileNotFoundError``/``FileExistsError`` messages (no ``errno``) are
    already such lines and are returned as they are.
    """
    if error.errno is None or not error.strerror:
        return " ".join(str(error).split())
    paths = " -> ".join(str(p) for p in (error.filename, error.filename2) if p is not None)
    where = f"{paths}: " if paths else ""
    advice = _ADVICE.get(error.errno)
    return f"{where}{error.strerror}" + (f"; {advice}" if advice else "")
