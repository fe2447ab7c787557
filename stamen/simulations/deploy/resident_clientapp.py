"""A SuperNode's ClientApp kept loaded: every task of the node served in one long-lived process.

Flower 1.42's ``flwr-clientapp`` serves one message and exits. Even forked from a
process with PyTorch and PyG imported (:mod:`stamen.simulations.deploy.clientapp_launcher`),
each message then pays, before the app's first line:

- unpacking and hash-checking the app bundle (FAB), about 0.4 s;
- importing Stamen's own modules, where PyG compiles its layer templates, about 0.3 s;
- at least 1 s when the SuperNode is still receiving the message's arrays: Flower's
  object pull backs off for 1 s at the first miss, then 2, 4, ... (``PULL_INITIAL_BACKOFF``).

:class:`ResidentClientApp` serves a task with the same Runtime API calls, in the same
order, as Flower's ``run_clientapp`` (``flwr.supernode.runtime.run_clientapp``), and
with Flower's own functions for each step (pulling and inflating the message, pushing
the reply and the context), all reached through Stamen's Flower adapter
(:mod:`stamen.simulations.flower_internals.clientapp_task` and the modules it uses). It differs
in three things only:

1. **One install and load per FAB.** The FAB of a given hash is installed and its
   ClientApp loaded on the first task, then called again for later ones, as Flower's
   simulation engine calls one loaded ClientApp for every message an actor serves.
   A task for a FAB of another hash first forgets the modules the previous FAB's
   folder provided (``sys.modules`` and ``sys.path``), so the new app's code runs,
   never a stale copy under the same module names.
2. **A short pull back-off**: :data:`PULL_BACKOFF` seconds at the first miss, doubling
   up to :data:`PULL_BACKOFF_CAP` (Flower's parameters of the same function).
3. **No process per task**: there is nothing to fork, so the task's own threads (the
   heartbeat, PyTorch's pools) are harmless.

The numbers do not change: Stamen's handlers seed every draw from the run config, the
round and the client (``stamen.client.device.seed_device``), which is what lets the
in-process engine serve every client from one process with the same numbers as
Flower's engines (``tests/simulations/test_determinism.py``, the e2e comparisons); a
deployment served this way ends with the simulation's accuracy (``stamen bench deploy``).

Flower's runtime-dependency installation (``--allow-runtime-dependency-installation``)
is not offered here: such a launch is refused and served by Flower's own ``flwr-clientapp``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from logging import DEBUG
from pathlib import Path

FLAGS_WITH_VALUE = {"--runtime-api-address", "--token", "--root-certificates", "--parent-pid"}  # flwr-clientapp's
FLAGS_ALONE = {"--insecure", "--allow-runtime-dependency-installation"}
PULL_BACKOFF = 0.01  # seconds after the first miss of an object the SuperNode is still receiving
PULL_BACKOFF_CAP = 0.05  # seconds, at most, between two tries (the SuperNode answers a pull in milliseconds)


def flag_values(argv: list[str]) -> dict[str, str]:
    """``flwr-clientapp``'s flags in ``argv`` and their values ("" for a flag alone); ValueError on anything else."""
    values: dict[str, str] = {}
    items = iter(argv)
    for flag in items:
        if flag in FLAGS_ALONE:
            values[flag] = ""
        elif flag in FLAGS_WITH_VALUE:
            value = next(items, None)
            if value is None:
                raise ValueError(f"{flag} needs a value")
            values[flag] = value
        else:
            raise ValueError(f"unexpected argument {flag[:40]!r}")
    return values


@dataclass(frozen=True)
class TaskArguments:
    """What Flower's SuperExec passed to ``flwr-clientapp`` for one task."""

    runtime_api_address: str
    token: str
    insecure: bool
    root_certificates: Path | None

    @classmethod
    def parse(cls, argv: list[str]) -> TaskArguments:
        """From arguments :func:`~stamen.simulations.deploy.clientapp_launcher.check_arguments` accepted."""
        values = flag_values(argv)
        if "--allow-runtime-dependency-installation" in values:
            raise ValueError("a resident ClientApp does not install runtime dependencies")
        if "--insecure" in values and "--root-certificates" in values:
            raise ValueError("--insecure and --root-certificates contradict each other")
        certificates = values.get("--root-certificates")
        return cls(
            values["--runtime-api-address"],
            values["--token"],
            "--insecure" in values,
            Path(certificates) if certificates else None,
        )


@dataclass
class _LoadedApp:
    fab_hash: str
    folder: Path
    app: object  # flwr.clientapp.ClientApp


def forget_modules_under(folder: Path) -> list[str]:
    """Drop from ``sys.modules`` every module whose file lies under ``folder``, and ``folder`` from ``sys.path``.

    Returns the names dropped. Modules elsewhere (PyTorch, PyG, Flower) stay imported.
    """
    folder = folder.resolve()
    dropped = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(folder):
            del sys.modules[name]
            dropped.append(name)
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != folder]
    return dropped


class ResidentClientApp:
    """Serves one task at a time (:meth:`serve`) with the ClientApp of its FAB kept loaded."""

    def __init__(self) -> None:
        self.loaded: _LoadedApp | None = None
        self.tasks = 0

    def _client_app(self, run, fab) -> object:
        # on use: flwr stays out of this module's import
        from stamen.simulations.flower_internals.app_loading import install_and_load

        if self.loaded is not None and self.loaded.fab_hash == fab.hash_str:
            return self.loaded.app
        if self.loaded is not None:
            forget_modules_under(self.loaded.folder)
            self.loaded = None
        folder, app = install_and_load(run, fab)  # checks the hash, as Flower's does
        self.loaded = _LoadedApp(fab.hash_str, folder, app)
        return app

    def serve(self, argv: list[str]) -> int:
        """Serve the task ``argv`` names, as ``flwr-clientapp ARGV`` would; return its exit code."""
        # on use: flwr stays out of this module's import
        from flwr.common import log

        # on use: flwr stays out of this module's import
        from stamen.simulations.flower_internals.clientapp_task import serve_task

        task = TaskArguments.parse(argv)
        code = serve_task(
            runtime_api_address=task.runtime_api_address,
            token=task.token,
            insecure=task.insecure,
            root_certificates=task.root_certificates,
            load_app=self._client_app,
            pull_backoff=PULL_BACKOFF,
            pull_backoff_cap=PULL_BACKOFF_CAP,
        )
        self.tasks += 1
        log(DEBUG, "resident ClientApp: task %d served (exit %d)", self.tasks, code)
        return code
