"""Installing an app bundle (FAB) and loading its ClientApp, as ``flwr-clientapp`` does for each task.

Replaces: ``flwr.cli.install`` (``install_from_fab``), ``flwr.clientapp.utils``
(``get_load_client_app_fn``) and ``flwr.clientapp.client_app`` (``LoadClientAppError``, what
a failed load raises), none public API.

The resident ClientApp (:mod:`stamen.simulations.deploy.resident_clientapp`) installs and loads a
FAB once and calls the loaded ClientApp for every later task of the same FAB; these are the
two steps ``run_clientapp`` (``flwr.supernode.runtime.run_clientapp``) takes for every task.

Dropping it: once Flower can keep a ClientApp loaded across a SuperNode's tasks (as its
simulation engine does), drop the resident ClientApp and this module with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flwr.cli.install import install_from_fab
from flwr.clientapp.client_app import LoadClientAppError
from flwr.clientapp.utils import get_load_client_app_fn

__all__ = ["LoadClientAppError", "install_and_load"]


def install_and_load(run: Any, fab: Any) -> tuple[Path, Any]:
    """Install ``fab`` (its hash checked, as Flower checks it) and load the ClientApp of ``run``: (its folder, the app).

    A ClientApp that cannot be loaded raises :class:`LoadClientAppError`.
    """
    folder = install_from_fab(fab.content, skip_prompt=True)
    load = get_load_client_app_fn(default_app_ref="", app_path=None, multi_app=True)
    app = load(run.fab_id, run.fab_version, fab.hash_str)
    return Path(folder), app
