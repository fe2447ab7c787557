"""A SuperNode host's warm ClientApp launcher: Flower's ``flwr-clientapp`` in a process whose imports are done.

Flower 1.42 runs every message a SuperNode receives in a new ``flwr-clientapp``
process (its SuperExec starts one per task, with a one-time token; the process serves
that one message and exits). A fresh Python spends most of that time importing
PyTorch, PyG and Flower. This process imports them once (:data:`PRELOAD`), then, for
each launch handed over by :mod:`stamen.simulations.deploy.clientapp_shim`, forks and runs
Flower's own ``flwr-clientapp`` entry point with the arguments Flower's SuperExec
chose. Each message is still served by a process of its own, which exits afterwards,
as with Flower's cold start: only the import time is saved.

With ``--resident`` it forks nothing: each launch is served in this process by
:class:`stamen.simulations.deploy.resident_clientapp.ResidentClientApp`, which keeps the
app's ClientApp loaded between messages (as a simulation actor does) and saves the
per-message bundle unpacking, app import and pull back-off too. Launches are then
served one at a time, in the order they come.

What stays as it was (forked launches; for resident ones see that module):

- the app: nothing of Stamen's is imported here; the forked process loads the
  ClientApp from the app bundle (FAB) the run shipped, exactly as a cold
  ``flwr-clientapp`` does (Flower puts the FAB's folder first on ``sys.path``);
- the numbers: nothing here computes, seeds or draws random numbers, so the forked
  process starts from the state a fresh one would (and the PyTorch thread pools,
  which do not survive ``fork``, are never started here: no tensor is made);
- the flags: only launches of ``flwr-clientapp`` for this node's Runtime API
  (``--runtime-api-address`` on the loopback with this node's port) are accepted.

The socket lives in a folder only this user can enter (see
:mod:`stamen.simulations.deploy.warm_clientapp`) and a connecting process must run as this
user (``SO_PEERCRED``). The launcher exits when its parent process does (the reaper
it runs under, :mod:`stamen.simulations.lifetime`, which goes with the ``stamen`` command that
started it and the SuperNode) and on SIGTERM/SIGINT; its forked processes are in its
process group, so stopping the group stops them.

``python -m stamen.simulations.deploy.clientapp_launcher --socket PATH --runtime-port PORT``
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import json
import os
import re
import selectors
import signal
import socket
import stat
import struct
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points

from stamen.simulations.deploy.resident_clientapp import ResidentClientApp, TaskArguments, flag_values

# What ``stamen.client.app``, its handlers and plug-ins import that is not Stamen's own (measured with
# ``python -X importtime``; httpcore and h11 are what Flower's HTTP client imports on first use):
# about 95 % of a cold ClientApp's start. Optional ones are
# imported when installed.
PRELOAD = ("numpy", "scipy.sparse", "torch", "torch_geometric", "flwr.app", "flwr.clientapp", "httpcore", "h11")
PRELOAD_OPTIONAL = ("pulp",)  # not opacus: its import calls logging.basicConfig (every log line twice)
REAP_INTERVAL = 0.02  # seconds between checks for ended processes (and a parent gone)
TOKEN = re.compile(r"[0-9a-fA-F]{16,256}")


class Refused(ValueError):
    """A launch request the launcher does not run."""


def check_arguments(argv: list[str], runtime_port: int) -> list[str]:
    """The ``flwr-clientapp`` arguments if they launch a ClientApp for this node, else :class:`Refused`."""
    if not isinstance(argv, list) or not all(isinstance(item, str) for item in argv):
        raise Refused("the arguments must be a list of strings")
    try:
        seen = flag_values(argv)
    except ValueError as problem:
        raise Refused(str(problem)) from None
    address = seen.get("--runtime-api-address", "")
    host, _, port = address.rpartition(":")
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback or port != str(runtime_port):
        raise Refused(f"--runtime-api-address {address!r} is not this node's Runtime API (loopback:{runtime_port})")
    if not TOKEN.fullmatch(seen.get("--token", "")):
        raise Refused("--token is missing or not a task token")
    if "--parent-pid" in seen and not seen["--parent-pid"].isdigit():
        raise Refused("--parent-pid must be a process id")
    return argv


def preload() -> float:
    """Import :data:`PRELOAD` (and what of :data:`PRELOAD_OPTIONAL` is installed); return the seconds it took."""
    started = time.perf_counter()
    for name in PRELOAD:
        importlib.import_module(name)
    for name in PRELOAD_OPTIONAL:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    return time.perf_counter() - started


def flwr_clientapp_entry_point():
    """Flower's ``flwr-clientapp`` command as a function (its console-script entry point)."""
    (entry,) = entry_points(group="console_scripts", name="flwr-clientapp")
    return entry.load()


def _run_child(argv: list[str], entry) -> None:
    """In the forked process: become ``flwr-clientapp ARGS`` and never return."""
    code = 1
    try:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        sys.argv = ["flwr-clientapp", *argv]
        entry()
        code = 0
    except SystemExit as ended:
        code = ended.code if isinstance(ended.code, int) else (0 if ended.code is None else 1)
    except BaseException:  # a forked process must never return into the launcher
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _same_user(conn: socket.socket) -> bool:
    credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", credentials)
    return uid == os.getuid()


def _say(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')}.{int(time.time() * 1000) % 1000:03d} stamen launcher: {text}", flush=True)


def _send(conn: socket.socket, reply: dict[str, object]) -> None:
    try:
        conn.sendall((json.dumps(reply) + "\n").encode())
    except OSError:
        pass  # the stand-in is gone; the process it asked for runs on regardless


@dataclass
class Launcher:
    """The serving loop: accept, check, fork, report the exit code back."""

    listener: socket.socket
    runtime_port: int
    entry: object
    parent: int = field(default_factory=os.getppid)
    running: dict[int, tuple[socket.socket, float]] = field(default_factory=dict)
    resident: ResidentClientApp | None = None  # serve launches in this process instead of forking

    def serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        while os.getppid() == self.parent:
            for _ in selector.select(REAP_INTERVAL):
                conn, _ = self.listener.accept()
                self.launch(conn)
            self.reap()

    def launch(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5.0)
            if not _same_user(conn):
                raise Refused("the connecting process runs as another user")
            with conn.makefile("r") as lines:
                request = json.loads(lines.readline() or "{}")
            argv = check_arguments(request.get("argv"), self.runtime_port)
        except (Refused, OSError, ValueError, AttributeError) as problem:
            print(f"stamen launcher: refused a launch: {problem}", file=sys.stderr, flush=True)
            _send(conn, {"error": str(problem)})
            conn.close()
            return
        if self.resident is not None:
            self.serve_here(conn, argv)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self.listener.close()
            conn.close()
            _run_child(argv, self.entry)
        self.running[pid] = (conn, time.perf_counter())
        _say(f"flwr-clientapp started as process {pid}")
        _send(conn, {"pid": pid})

    def serve_here(self, conn: socket.socket, argv: list[str]) -> None:
        """Serve one launch in this process (``--resident``) and report its exit code.

        A launch a resident ClientApp does not take is handed back for Flower's own
        ``flwr-clientapp`` (``{"cold": why}``) before anything of the task is pulled.
        """
        try:
            TaskArguments.parse(argv)
        except ValueError as problem:
            _send(conn, {"cold": str(problem)})
            conn.close()
            return
        started = time.perf_counter()
        _send(conn, {"pid": os.getpid()})
        code = self.resident.serve(argv)
        _say(f"task served in this process, exit {code}, {time.perf_counter() - started:.2f} s")
        _send(conn, {"exit": code})
        conn.close()

    def reap(self) -> None:
        while self.running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn, started = self.running.pop(pid, (None, 0.0))
            if conn is not None:
                code = os.waitstatus_to_exitcode(status)
                _say(f"process {pid} exited with {code} after {time.perf_counter() - started:.2f} s")
                _send(conn, {"exit": code})
                conn.close()


def bind(path: str) -> socket.socket:
    """Listen on ``path``, replacing a socket left behind by a launcher that was killed."""
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise FileExistsError(f"{path} exists and is not a socket; Stamen will not replace it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except OSError:
            os.unlink(path)  # nobody listens: a stale socket of a launcher that is gone
        else:
            raise RuntimeError(f"another ClientApp launcher listens on {path}")
        finally:
            probe.close()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    return listener


def stop_once(signum: int, frame: object) -> None:
    """SIGTERM and SIGINT: exit (0), once. Later signals are ignored: a second one (the deployment's SIGTERM
    after the parent monitor's SIGINT, say) raised again inside the exit's own clean-up (PyTorch's atexit
    finalizers) and printed a traceback to the node's log. The deployment still SIGKILLs a launcher that
    outlives its grace period."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise SystemExit(0)


def serve_on(
    socket_path: str, runtime_port: int, warm_up: Callable[[], Callable[[], object]], resident: bool = False
) -> None:
    """Listen on ``socket_path``, call ``warm_up`` (it returns the entry point to fork into), serve until stopped.

    ``resident``: serve every launch in this process (:class:`ResidentClientApp`), forking nothing.

    SIGTERM and SIGINT stop it; the socket is removed on the way out. It listens before
    warming up: a launch that comes early waits in the backlog instead of going cold.
    """

    signal.signal(signal.SIGTERM, stop_once)
    signal.signal(signal.SIGINT, stop_once)
    listener = bind(socket_path)
    try:
        entry = warm_up()
        launcher = Launcher(listener, runtime_port, entry)
        if resident:
            launcher.resident = ResidentClientApp()
            _stop_with_parent(launcher.parent)
        launcher.serve()
    finally:
        listener.close()
        remove_socket(socket_path)


def remove_socket(socket_path: str) -> None:
    """Remove the socket, and its folder when that is an empty ``stamen-clientapp-*`` one (Stamen made it)."""
    try:
        os.unlink(socket_path)
    except FileNotFoundError:
        pass
    folder = os.path.dirname(socket_path)
    if os.path.basename(folder).startswith("stamen-clientapp-"):
        try:
            os.rmdir(folder)  # only an empty folder goes
        except OSError:
            pass


def _stop_with_parent(parent: int) -> None:
    """Stop this process (SIGINT) when ``parent`` is gone, also in the middle of a task (Flower's monitor)."""
    # on use: flwr stays out of this module's import
    from stamen.simulations.flower_internals.parent_monitor import start_parent_process_monitor

    start_parent_process_monitor(parent)


def warm_up(runtime_port: int, socket_path: str, resident: bool = False) -> Callable[[], object]:
    """Import :data:`PRELOAD`; return Flower's ``flwr-clientapp`` entry point."""
    seconds = preload()
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
    if threads > 1 and not resident:  # a fork copies one thread only: locks held by the others would stay held
        raise SystemExit(f"stamen launcher: the imports started {threads - 1} threads; forking is unsafe, giving up")
    print(
        f"stamen launcher: {', '.join(PRELOAD)} imported in {seconds:.1f} s; "
        f"{'serving' if resident else 'launching'} flwr-clientapp for the Runtime API on port {runtime_port} "
        f"from {socket_path}{' in this process' if resident else ''}",
        flush=True,
    )
    return flwr_clientapp_entry_point()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", required=True, help="Unix socket path (in a folder only this user can enter)")
    parser.add_argument("--runtime-port", type=int, required=True, help="this node's SuperNode Runtime API port")
    parser.add_argument("--resident", action="store_true", help="serve every launch in this process, the app loaded")
    args = parser.parse_args(argv)
    serve_on(
        args.socket, args.runtime_port, lambda: warm_up(args.runtime_port, args.socket, args.resident), args.resident
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
