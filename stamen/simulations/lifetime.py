"""Every process Stamen starts dies with the command that started it, ``kill -9`` included.

A process cannot clean up after a ``kill -9`` of itself, so something else must: each
process Stamen starts is started through a small *reaper* (``python -m
stamen.simulations.lifetime``), one per started command, which

- marks itself a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): whatever its
  command starts and leaves behind, also in a session of its own (Flower's SuperExec)
  or by a double fork (Ray's daemons), is reparented to the reaper instead of init, so
  the reaper's descendants are the whole tree, always;
- starts the command with ``PR_SET_PDEATHSIG`` = SIGKILL (it dies if the reaper does),
  from its single thread (the signal follows the thread that forked, not the process);
- watches the Stamen process that started it (a ``pidfd`` that wakes it at once, and
  ``os.getppid()`` every :data:`POLL_SECONDS`): when that is gone, for any reason, it
  freezes its whole tree (SIGSTOP, so nothing can start or write anything more), kills
  it (SIGKILL) and exits;
- when its command exits, stops what the command left behind (SIGTERM, then SIGKILL
  after ``--grace`` seconds) and exits with the command's status (a signal as a signal).

Why a reaper and not just ``PR_SET_PDEATHSIG`` on each child: Flower's SuperLink starts
SuperExec in a new session, SuperExec the simulation process, and that one Ray's
daemons and workers; a death signal (or a process group) reaches the direct child
only, and the grandchildren carry on (the run goes on writing ``metrics.jsonl``).
Why the reaper watches its parent rather than taking a death signal itself: the death
signal fires when the *thread* that started it ends, and Stamen starts processes from
threads too (a pidfd and ``getppid()`` follow the process). Why it freezes and kills at
once rather than asking first: the process that would have collected the results, and
recorded the run's state, is gone; what is frozen can write nothing more.

Measured (2 cores, ``stamen run`` on Flower, 2 clients, ``kill -9`` mid-run): without reapers,
13 processes (SuperLink, SuperExec, ``flwr run``, the simulation, Ray's daemons and
actors) carried on and the run kept writing ``metrics.jsonl``; with reapers, none is left
(all 16 of the tree, its two reapers included, gone 0.5 s after the kill).

The reaper and its command form a process group of their own (optionally a session of their own):
:class:`Bound` (what :func:`start` returns) signals that group, so ``terminate()``
reaches the command (the reaper ignores SIGINT, SIGTERM and SIGHUP: it stays to clean
up), and ``kill()`` freezes and kills the whole tree (:func:`kill_tree`).

On systems other than Linux there is no subreaper and no death signal: the reaper still
watches its parent and kills the tree it can see (:func:`kill_tree`: the processes below
it by parent link), but a process that left the tree (a daemon) escapes it there.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from stamen.contract.provenance import Provenance

POLL_SECONDS = 0.1  # how often a reaper checks for its parent (and for ended processes)
GRACE_SECONDS = 5.0  # what a command left behind has between SIGTERM and SIGKILL once it exited
REAPER = "stamen.simulations.lifetime"  # in every reaper's command line
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where there is no such call (not Linux) or it failed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    return libc.prctl(option, value, 0, 0, 0) == 0


def kill_tree(root: int, timeout: float = 5.0, include_root: bool = True) -> None:
    """Stop ``root`` and every process below it, at once and for good.

    Each process is suspended before its children are listed, so none can start a
    process that escapes; then all of them get SIGKILL (a stopped process dies of it
    too) and are waited for. Nothing of the tree can write a file afterwards.
    ``include_root=False`` spares ``root`` itself (a reaper clearing its own tree).
    """
    # on use: psutil stays out of this module's import
    import psutil

    try:
        top = psutil.Process(root)
        frontier = [top] if include_root else top.children()
    except psutil.NoSuchProcess:
        return
    frozen: dict[int, psutil.Process] = {}
    own = {child.pid for child in psutil.Process().children()}
    while frontier:
        while frontier:
            process = frontier.pop()
            if process.pid in frozen:
                continue
            try:
                process.suspend()
                frozen[process.pid] = process
                frontier.extend(process.children())
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        if not include_root:  # a process that ended meanwhile left its children to the reaper: those too
            with contextlib.suppress(psutil.NoSuchProcess):
                frontier = [child for child in top.children() if child.pid not in frozen]
    for process in frozen.values():
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            process.kill()
    # A child of ours is left for its parent's wait (a Popen's exit status stays right); others are waited for.
    _wait_ended([p for pid, p in frozen.items() if pid not in own], timeout)


def _wait_ended(processes: list, timeout: float) -> None:
    """Wait until each process has ended; a zombie has (it runs nothing: who reaps it, and when, is not ours)."""
    # on use: psutil stays out of this module's import
    import psutil

    deadline = time.monotonic() + timeout
    waiting = list(processes)
    while waiting and time.monotonic() < deadline:
        still = []
        for process in waiting:
            with contextlib.suppress(psutil.Error):
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    still.append(process)
        waiting = still
        if waiting:
            time.sleep(0.01)


def reaper_command(
    command: Sequence[str], grace: float = GRACE_SECONDS, remove: Sequence[str | os.PathLike] = ()
) -> list[str]:
    """``command`` run under a reaper watching this process (see the module's docstring)."""
    removals = [part for path in remove for part in ("--remove", os.fspath(path))]
    reaper = [sys.executable, "-m", REAPER, "--parent", str(os.getpid()), "--grace", str(grace)]
    return [*reaper, *removals, "--", *command]


class Bound(subprocess.Popen):
    """A command under its reaper: a ``Popen`` whose signals reach the command, and whose kill the whole tree.

    :attr:`pid` is the reaper's (its process group's); the command's exit status is the
    reaper's. ``terminate()``/``send_signal()`` signal the group, ``kill()`` is
    :func:`kill_tree` of the reaper and everything below it.
    """

    def send_signal(self, sig: int) -> None:
        self.poll()
        if self.returncode is not None:  # reaped: the PID may name another process by now
            return
        if sig == signal.SIGKILL:
            kill_tree(self.pid)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def start(
    command: Sequence[str],
    *,
    new_session: bool = False,
    grace: float = GRACE_SECONDS,
    remove: Sequence[str | os.PathLike] = (),
    **popen,
) -> Bound:
    """Start ``command`` under a reaper of this process (``Popen`` keywords pass on).

    ``new_session``: the reaper and the command in a session of their own (a terminal's
    Ctrl-C reaches this process only, which then stops them); otherwise a process group
    of their own in this process's session. ``remove``: files (not folders) and then
    empty folders, made by Stamen for the command, that the reaper removes once the
    command's tree is gone, however it ended (a ClientApp launcher's socket).

    The command's environment (``env``, else this process's) also carries this process's provenance
    (:meth:`Provenance.environment`), so that what it records names the command that started it; a
    provenance already in ``env`` (a sweep hands each run its own) is kept.
    """
    popen["env"] = {**Provenance.of_process().environment(), **(popen.get("env") or os.environ)}
    if new_session:
        popen["start_new_session"] = True
    else:
        popen["process_group"] = 0
    return Bound(reaper_command(command, grace, remove), **popen)


def call(command: Sequence[str], **popen) -> int:
    """Run ``command`` under a reaper and return its exit status; on any exception (Ctrl-C) kill its tree first."""
    process = start(command, **popen)
    try:
        return process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise


def run(
    command: Sequence[str],
    *,
    input: str | bytes | None = None,
    timeout: float | None = None,
    capture_output: bool = False,
    check: bool = False,
    **popen,
) -> subprocess.CompletedProcess:
    """``subprocess.run`` under a reaper: on a timeout or any exception the command's whole tree is killed."""
    if capture_output:
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    process = start(command, **popen)
    with process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except BaseException:
            process.kill()
            process.wait()
            raise
    done = subprocess.CompletedProcess(list(command), process.returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def stop(process: subprocess.Popen, grace: float = 15.0) -> None:
    """SIGTERM (to the command, through its group), then, past ``grace`` seconds, the whole tree killed."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


def foreground(process: subprocess.Popen, companions: Sequence[subprocess.Popen] = (), grace: float = 15.0) -> int:
    """Wait for ``process`` as a command that had become it would; return its exit code (128+N for signal N).

    Ctrl-C or SIGTERM stops it (SIGTERM, then its tree killed past ``grace`` seconds) and
    returns 130. ``companions`` (a SuperNode's ClientApp launcher) are stopped the same way
    once ``process`` has ended, however it ended.
    """

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, interrupt) if main_thread else None
    try:
        try:
            code = process.wait()
        except KeyboardInterrupt:
            stop(process, grace)
            code = 130
    finally:
        try:
            for companion in companions:
                stop(companion, grace)
        finally:
            if main_thread:
                signal.signal(signal.SIGTERM, previous)
    return 128 - code if code < 0 else code


def die_with_parent() -> None:
    """In a process Stamen started some other way (a pool's worker): SIGKILL when its parent thread ends (Linux)."""
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the call
        os.kill(os.getpid(), signal.SIGKILL)


# the reaper --------------------------------------------------------------------------------------


def _spawn(command: list[str]) -> int:
    """Fork and exec ``command`` with a death signal bound to this (single-threaded) process."""
    reaper = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    try:  # the child: never returns
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != reaper:  # the reaper died before the call: so must this
            os._exit(137)
        os.execvp(command[0], command)
    except OSError as problem:
        os.write(2, f"stamen: cannot start {command[0]}: {problem}\n".encode())
        os._exit(127)
    except BaseException:  # a forked reaper must never return into the reaper's loop
        os._exit(126)


def _reap(child: int) -> int | None:
    """Collect every ended process (orphans come here too); the wait status of ``child`` if it ended."""
    status = None
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == child:
            status = code


def _descendants() -> list:
    """The reaper's live descendants (not the zombies it has yet to collect)."""
    # on use: psutil stays out of this module's import
    import psutil

    live = []
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if process.status() != psutil.STATUS_ZOMBIE:
                live.append(process)
    return live


def _clear(grace: float) -> None:
    """Stop what the command left behind: SIGTERM, up to ``grace`` seconds, then the tree frozen and killed."""
    # on use: psutil stays out of this module's import
    import psutil

    left = _descendants()
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    deadline = time.monotonic() + grace
    while _descendants() and time.monotonic() < deadline:
        _reap(-1)
        time.sleep(POLL_SECONDS)
    kill_tree(os.getpid(), include_root=False)
    _settle()


def _settle(timeout: float = 5.0) -> None:
    """Wait for the killed processes (reparented ones included) so none is left a zombie."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # none left
        if pid == 0:
            time.sleep(0.02)


def _remove(paths: list[str]) -> None:
    """Remove what the command left of ``paths``: a file or socket, or a folder if it is empty."""
    for path in paths:
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)  # only an empty folder goes
            elif os.path.lexists(path):
                os.unlink(path)


def _exit_like(status: int) -> None:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # died of a signal: die of it too, so that our parent sees the same
        if -code not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    sys.exit(code)


def _parent_handle(parent: int) -> int | None:
    """A file descriptor that becomes readable when ``parent`` ends (Linux ``pidfd``), or None."""
    try:
        return os.pidfd_open(parent)
    except (AttributeError, OSError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {REAPER}", description=__doc__.splitlines()[0])
    parser.add_argument("--parent", type=int, required=True, help="the process whose end ends the command")
    parser.add_argument("--grace", type=float, default=GRACE_SECONDS)
    parser.add_argument("--remove", action="append", default=[], help="a path to remove once the tree is gone")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # meant for the command, which gets them too
        signal.signal(signum, lambda *_: None)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != args.parent:
        return 137  # the command that started us is already gone: start nothing
    parent_ended = _parent_handle(args.parent)
    child = _spawn(command)
    while True:
        status = _reap(child)
        if status is not None:
            _clear(args.grace)
            _remove(args.remove)
            _exit_like(status)
        if os.getppid() != args.parent:  # the Stamen command is gone: nothing of its tree may go on
            kill_tree(os.getpid(), include_root=False)
            _settle()
            _remove(args.remove)
            return 137
        if parent_ended is None:
            time.sleep(POLL_SECONDS)
        else:  # wakes the moment the parent ends
            select.select([parent_ended], [], [], POLL_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
