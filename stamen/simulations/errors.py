"""What a command reports besides bad input (``ValueError`` and friends: exit 2).

Every command's exit codes, one class per kind of failure (docs/runs.md, "Statuses and exit codes"):
0 done; 1 a run failed (:class:`RunFailed`; its status says why); 2 bad input, before anything is
written (``ValueError``, and Stamen's own one-line ``FileNotFoundError``/``FileExistsError``); 3 a run
finished degraded; 4 the environment failed (:class:`EnvironmentFailed`, and every ``OSError`` the
operating system raised: a full disk, a permission, a read-only file system, a busy port); 130
interrupted.
"""

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


class EnvironmentFailed(RuntimeError):
    """The machine failed a command (a full disk mid-run, a file system gone read-only): exit 4, what to do and how
    to go on; a run it ended is recorded ``failed`` with the reason."""


EXIT_ENVIRONMENT = 4


def is_bad_input(error: OSError) -> bool:
    """Stamen's own one-line file errors (no ``errno``: a data root or run folder that is not there, a run
    directory that exists) are bad input; an error the operating system raised is the environment's."""
    return error.errno is None


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
