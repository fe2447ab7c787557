"""Running the Stamen app with Flower's CLI, offline and without leftovers.

``flwr run`` on a fresh machine tries to install the app's dependencies at run time,
checks for updates, sends telemetry, keeps its state in ``~/.flwr`` and leaves the
local SuperLink it starts running. :func:`flower_environment` turns the first three
off and points ``FLWR_HOME`` at a folder of the run's own (:func:`flower_home`, in
Stamen's cache, never in the project); :class:`LocalSuperLink` starts a simulation
SuperLink of our own on free ports and stops it and every process it started
(:func:`stamen.simulations.lifetime.kill_tree`: Flower starts SuperExec in a session of its own,
and Ray its workers under the simulation process, so a process group does not reach them
all). The SuperLink and ``flwr run`` are started under a reaper
(:mod:`stamen.simulations.lifetime`): should this process die, even of ``kill -9``, they and
everything they started die with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from stamen.common.file_writes import atomic_write
from stamen.contract.algorithms import plugin_keys
from stamen.contract.provenance import BUILD_FILE, code_version, stamen_version
from stamen.contract.run_config import RunConfig
from stamen.simulations import lifetime
from stamen.simulations.lifetime import kill_tree
from stamen.simulations.relay import relayed_call

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the source folder, or site-packages once installed
# The app's pyproject.toml (its Flower config and run-config defaults): the source folder's, or the copy
# that an installed wheel carries in simulations/app/.
APP_CONFIG_DIR = (
    PROJECT_ROOT if (PROJECT_ROOT / "pyproject.toml").is_file() else Path(__file__).resolve().parent / "app"
)
FEDERATION = "stamen"
INLINE_BYTES = 8 * 1024 * 1024  # Ray objects up to this size travel with their task (Ray's default: 100 KB)
STAGED = ".stamen-staged-app"  # marks the copy of the app that stage_app made
# What `flwr run --federation-config` accepts (Flower 1.42: the fields of its SimulationConfig, with `-`
# for `_`; a pyproject federation's options.num-supernodes, options.backend.client-resources.num-cpus,
# options.backend.init-args.num-cpus, ...), each with its type. flwr_run passes them on as given;
# stamen's preflight refuses any other key (a test keeps this equal to Flower's own list).
FEDERATION_KEYS: dict[str, type] = {
    "num-supernodes": int,
    "client-resources-num-cpus": int,
    "client-resources-num-gpus": float,
    "backend": str,
    "verbose": bool,
    "init-args-num-cpus": int,
    "init-args-num-gpus": int,
    "init-args-logging-level": str,
    "init-args-log-to-driver": bool,
}


def flower_environment(flwr_home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for Flower's processes: offline, quiet, with this venv's tools first.

    ``extra`` adds the run's own variables (:func:`cluster_environment`: ``RAY_ADDRESS`` and the
    head's partition digest). Without a ``RAY_ADDRESS`` there, none reaches Flower: the simulation
    starts a Ray instance of its own (a stray ``RAY_ADDRESS`` would skip the cluster's pre-flight).
    """
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)
    env.update(
        {
            "FLWR_HOME": str(flwr_home),
            "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
            "FLWR_DISABLE_UPDATE_CHECK": "1",
            "FLWR_TELEMETRY_ENABLED": "0",
            # SuperExec looks for new work every second by default: the run would wait for it
            "FLWR_SUPEREXEC_TASK_POLL_INTERVAL": "0.05",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    # Each simulated client is a single-threaded process; more torch threads than
    # cores makes a small machine many times slower.
    env.setdefault("OMP_NUM_THREADS", "1")
    # Library deprecation notices from every Ray worker drown the run's own log.
    env.setdefault("PYTHONWARNINGS", "ignore::DeprecationWarning,ignore::FutureWarning")
    # A client without a GPU share sees no GPU (docs/performance.md): Ray empties CUDA_VISIBLE_DEVICES for an
    # actor with num_gpus=0 only while this is on (its default in Ray 2.55; a tip says a later Ray turns it off).
    # Set, not defaulted: a user's 0 would let every zero-share client train on GPU 0. On a cluster each node's
    # workers take it from that node's `ray start`; the client checks its share itself too (stamen/client/device.py).
    env["RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"] = "1"
    env.update(extra or {})
    # A client's message and context (weights, its optimizer moments: about 1 MB for a Cora GCN)
    # travel to its Ray actor and back every round. Above 100 KB, Ray's default, each goes through
    # the shared-memory object store, a few milliseconds of round trips per message on a small
    # machine; inline they pass with the task (Cora, 10 clients: 13.5 -> 8.5 ms between two
    # messages on an actor, the mean of three 40-round runs each way; docs/performance.md).
    env.setdefault("RAY_max_direct_call_object_size", str(INLINE_BYTES))
    return env


def flower_state() -> Path:
    """Where Flower's state of Stamen's commands lives: ``$STAMEN_CACHE/flower`` (never the project)."""
    return Path(os.environ.get("STAMEN_CACHE", Path.home() / ".cache" / "stamen")).expanduser() / "flower"


@contextlib.contextmanager
def flower_home() -> Iterator[Path]:
    """A fresh ``FLWR_HOME`` under ``$STAMEN_CACHE/flower/``, made here and removed afterwards.

    It is kept when the block fails, so that Flower's logs in it can be read.
    """
    parent = flower_state()
    parent.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="run-", dir=parent))
    yield home  # an exception propagates and leaves the folder (and its logs) in place
    shutil.rmtree(home, ignore_errors=True)


def stage_app(home: Path) -> Path:
    """The app's own files (its packages, ``pyproject.toml``, ``README.md``) copied to ``home/app``.

    ``flwr run`` walks every file under the folder it is given before it filters them,
    and the project folder usually holds a virtual environment of tens of thousands of
    files: building the app bundle from this copy takes a fraction of a second. The copy carries
    Stamen's version and the checkout's commit (:data:`stamen.contract.provenance.BUILD_FILE`), which its clients check
    with the head's (:mod:`stamen.contract.identity`).
    """
    app = home / "app"
    if (app / STAGED).is_file():  # an earlier copy of ours (a deployment's operator home is reused)
        shutil.rmtree(app)
    elif app.exists():
        raise FileExistsError(f"{app} exists and is not a copy Stamen made; remove it or choose another folder")
    config = tomllib.loads((APP_CONFIG_DIR / "pyproject.toml").read_text())
    for package in config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]:
        shutil.copytree(PROJECT_ROOT / package, app / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(APP_CONFIG_DIR / name, app / name)
    _add_plugin_keys(app / "pyproject.toml")
    (app / STAGED).write_text("made by stamen: a copy of the app's files for flwr run\n")
    # The commit travels with the app: a Ray cluster's other nodes do not get this command's environment.
    build = {"version": stamen_version() or "", "commit": code_version() or ""}
    (app / BUILD_FILE).write_text("".join(f"{key} = {toml_value(value)}\n" for key, value in build.items()))
    (app / ".gitignore").write_text(f"{STAGED}\n")
    return app


def _add_plugin_keys(pyproject: Path) -> None:
    """The algorithms' keys (:func:`stamen.contract.algorithms.plugin_keys`) that the staged app's
    ``[tool.flwr.app.config]`` lacks (a plug-in's; Stamen's own are in the table, a test keeps them there), added
    with their defaults: Flower keeps of a run's overrides only the keys that table holds."""
    header = "[tool.flwr.app.config]\n"
    text = pyproject.read_text()
    if header not in text:
        raise ValueError(f"{pyproject} holds no {header.strip()} table")
    table = tomllib.loads(text)["tool"]["flwr"]["app"]["config"]
    keys = {name: key for name, key in plugin_keys().items() if name not in table}
    if not keys:
        return
    lines = "".join(f"{name} = {toml_value(key.default)}\n" for name, key in keys.items())
    pyproject.write_text(text.replace(header, header + lines, 1))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


SIMULATION_SHIM = """#!{python}
# Made by Stamen: Flower's flwr-simulation, its link state indexed by node; see {module}.
import sys
from stamen.simulations.flower_internals.link_state import flwr_simulation
sys.exit(flwr_simulation())
"""


def simulation_shim(flwr_home: Path) -> Path:
    """The folder of a ``flwr-simulation`` shim in ``flwr_home`` (Stamen's own fresh folder), to put first on
    the ``PATH`` of a local simulation's SuperLink: Flower's SuperExec starts the simulation process by
    that name, and the shim runs Flower's with the link state indexed by node
    (:mod:`stamen.simulations.flower_internals.link_state`). Written whole or not at all."""
    from stamen.simulations.flower_internals import link_state  # the adapter, when a SuperLink starts

    folder = flwr_home / "bin"
    folder.mkdir(mode=0o700, exist_ok=True)
    shim = folder / "flwr-simulation"
    atomic_write(shim, SIMULATION_SHIM.format(python=sys.executable, module=link_state.__file__), mode=0o700)
    return folder


class LocalSuperLink:
    """A ``flower-superlink --simulation`` on free local ports, stopped by its PID on exit.

    Use as a context manager; :attr:`flwr_home` holds a ``config.toml`` whose default
    federation points ``flwr run`` at this SuperLink.
    """

    def __init__(self, flwr_home: Path, startup_timeout: float = 60.0, extra: Mapping[str, str] | None = None) -> None:
        self.flwr_home = flwr_home
        self.extra = dict(extra or {})  # the run's own environment (flower_environment): the simulation reads it
        self.startup_timeout = startup_timeout
        self.port = free_port()  # one HTTP port serves the Control, Fleet and runtime APIs
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> LocalSuperLink:
        self.flwr_home.mkdir(parents=True, exist_ok=True)
        (self.flwr_home / "config.toml").write_text(
            f'[superlink]\ndefault = "{FEDERATION}"\n\n'
            f'[superlink.{FEDERATION}]\naddress = "127.0.0.1:{self.port}"\ninsecure = true\n'
        )
        env = flower_environment(self.flwr_home, self.extra)
        env["PATH"] = f"{simulation_shim(self.flwr_home)}{os.pathsep}{env['PATH']}"
        superlink = shutil.which("flower-superlink", path=env["PATH"])
        if superlink is None:
            raise FileNotFoundError("flower-superlink not found: install the project (pip install -e .)")
        log_file = self.flwr_home / "superlink.log"
        command = [
            superlink,
            "--insecure",
            "--simulation",
            "--isolation",
            "subprocess",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-file",
            str(log_file),
        ]
        self.process = lifetime.start(
            command,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            new_session=True,  # a terminal's Ctrl-C reaches the CLI alone, which stops the tree
        )
        try:
            deadline = time.monotonic() + self.startup_timeout
            while not _listening(self.port):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the local SuperLink did not start; see {log_file}")
                time.sleep(0.2)
        except BaseException:  # Ctrl-C while starting too
            self.stop()
            raise
        return self

    @property
    def pid(self) -> int:
        """The PID of the SuperLink's reaper: every process of the run is below it."""
        assert self.process is not None, "the SuperLink is not running"
        return self.process.pid

    def stop(self) -> None:
        """Stop the SuperLink and every process it started (see :func:`kill_tree`)."""
        if self.process is None:
            return
        kill_tree(self.process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def toml_value(value: object) -> str:
    """A Python value as a TOML literal for ``--run-config``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def run_config_overrides(config: RunConfig) -> dict[str, object]:
    """The keys of ``config`` not at their defaults, as ``flwr run --run-config`` takes them: the app's own
    defaults (its ``pyproject.toml``) are the run config's, so the ServerApp reads ``config`` back from these."""
    defaults = RunConfig().to_flower()
    return {key: value for key, value in config.to_flower().items() if defaults.get(key) != value}


def flwr_run(
    flwr_home: Path,
    run_config: dict[str, object],
    federation_config: dict[str, object],
    log: Path | None = None,
    echo: bool = False,
    extra: Mapping[str, str] | None = None,
    app: Path | None = None,
    watchers: Sequence[TextIO] = (),
) -> int:
    """``flwr run <project> stamen --stream`` against the SuperLink configured in ``flwr_home``.

    ``flwr run`` returns as soon as the run is submitted unless it streams the logs,
    so it always streams: into the file ``log`` and, with ``echo`` or without ``log``, to the
    terminal; relayed without colour codes (:mod:`stamen.simulations.relay`). ``extra``: as for
    :func:`flower_environment`. ``app``: another Flower app's folder (the bench's Flower floor)
    instead of Stamen's, staged (:func:`stage_app`). ``watchers``: more sinks of the relayed
    lines (:class:`stamen.simulations.run_follow.RunIdSink`).
    """
    env = flower_environment(flwr_home, extra)
    command = [
        shutil.which("flwr", path=env["PATH"]) or "flwr",
        "run",
        str(app if app is not None else stage_app(flwr_home)),
        FEDERATION,
        "--stream",
        "--run-config",
        " ".join(f"{k}={toml_value(v)}" for k, v in run_config.items()),
    ]
    if federation_config:
        command += ["--federation-config", " ".join(f"{k}={toml_value(v)}" for k, v in federation_config.items())]

    with contextlib.ExitStack() as files:
        sinks = [files.enter_context(open(log, "w"))] if log is not None else []
        if echo or log is None:
            sinks.append(sys.stdout)
        return relayed_call(command, [*sinks, *watchers], env=env)


class PeakMemory:
    """Samples the resident memory of a process and all its descendants in a thread.

    ``include_root=False`` counts the descendants only (what a command started, not the command itself).
    """

    def __init__(self, pid: int, interval: float = 0.25, include_root: bool = True) -> None:
        self.pid = pid
        self.interval = interval
        self.include_root = include_root
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @property
    def peak_gb(self) -> float:
        return self.peak_bytes / 1024**3

    def _sample(self) -> None:
        # on use: psutil stays out of this module's import
        import psutil

        try:
            root = psutil.Process(self.pid)
            while not self._stop.wait(self.interval):
                total = 0
                for process in [root, *root.children(recursive=True)][0 if self.include_root else 1 :]:
                    try:
                        total += process.memory_info().rss
                    except psutil.NoSuchProcess:
                        continue
                self.peak_bytes = max(self.peak_bytes, total)
        except psutil.NoSuchProcess:
            return

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
