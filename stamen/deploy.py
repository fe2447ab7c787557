"""Deployments from Python: :func:`local` is ``stamen deploy local``, :func:`run` is ``stamen deploy run``.

    deployed = stamen.deploy.local({"num-server-rounds": 5, "run-name": "d"}, clients=3, loopback=True)
    stamen.load(deployed.run_dir).rows
    stamen.deploy.run({"num-server-rounds": 5}, ca="certs/ca.pem")   # on the SuperLink's host

Each call takes the run config as :func:`stamen.run` does (a dict of kebab- or snake_case keys, a
TOML file, keyword overrides), checks it (:meth:`stamen.contract.run_config.RunConfig.from_mapping`)
and calls the function the command calls (:func:`stamen.cli.commands.deploy.deploy_local`,
:func:`~stamen.cli.commands.deploy.deploy_run`); nothing is printed unless ``progress``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stamen.config import Config, run_config
from stamen.simulations.deploy.local import SUPERLINK_PORT
from stamen.simulations.errors import RunFailed, one_line
from stamen.simulations.flower import flower_state

if TYPE_CHECKING:
    from stamen.cli.commands.deploy import Deployed

__all__ = ["Deployed", "local", "run"]


def local(
    config: Config = None,
    *,
    clients: int = 3,
    out: str | os.PathLike[str] | None = None,
    workdir: str | os.PathLike[str] | None = None,
    loopback: bool = False,
    clientapps: str = "resident",
    progress: bool = False,
    **overrides: Any,
) -> Deployed:
    """A whole deployment on this machine: a SuperLink and ``clients`` SuperNodes with TLS and node
    authentication (network namespaces as hosts when root, unless ``loopback``), the run, then every process
    stopped. The run directory is the config's; the deployment's keys, partitions and logs stay in ``workdir``.

    Args:
        config, overrides: the run config, as for :func:`stamen.run`.
        clients: the number of SuperNodes (``--clients``).
        out: the folder the run directory goes into (``output-dir``, default ``runs``).
        workdir: the deployment's own folder (``--workdir``; default: Stamen's state folder's ``deploy-local``;
            an earlier deployment's files there are replaced, nothing else).
        loopback: every host on 127.0.0.1, no namespaces (``--loopback``).
        clientapps: how a SuperNode serves its messages: ``resident``, ``forked`` or ``cold`` (``--clientapps``).
        progress: stream the run's log (otherwise nothing is printed; the log is kept in ``run.log``).

    Raises:
        ValueError: bad input, before anything starts; the message is the line ``stamen deploy local`` prints.
        stamen.simulations.errors.RunFailed: the deployed run failed or was stopped.
    """
    # on use: torch, torch_geometric, flwr stay out of this module's import
    from stamen.cli.commands.deploy import deploy_local
    from stamen.simulations.preflight import check_config

    if isinstance(clients, bool) or not isinstance(clients, int) or clients < 1:
        raise ValueError(f"clients must be a whole number >= 1, got {clients!r}")
    try:
        checked = check_config(run_config(config, overrides, output_dir=None if out is None else os.fspath(out)))
        folder = Path(workdir) if workdir is not None else flower_state() / "deploy-local"
        return deploy_local(checked, clients, folder, loopback=loopback, clientapps=clientapps, stream=progress)
    except ValueError as error:
        raise ValueError(one_line(error)) from None


def run(
    config: Config = None,
    *,
    ca: str | os.PathLike[str],
    superlink: str | None = None,
    out: str | os.PathLike[str] | None = None,
    progress: bool = False,
    **overrides: Any,
) -> Deployed:
    """``flwr run`` of the run config against a running deployment's SuperLink (from the SuperLink's host, or
    through an SSH tunnel to its control port), followed to the run's end.

    Args:
        config, overrides: the run config, as for :func:`stamen.run`.
        ca: the deployment's ``ca.pem`` (``--ca``).
        superlink: the SuperLink's control ``HOST:PORT`` (``--superlink``; default: this host's loopback).
        out: the folder the run directory goes into on the SuperLink's host (``output-dir``, default ``runs``).
        progress: stream the run's end on stdout.

    Raises:
        ValueError: bad input, before anything is submitted.
        stamen.simulations.errors.RunFailed: the run failed, or was stopped from outside (recorded as such).
    """
    # on use: torch, torch_geometric, flwr stay out of this module's import
    from stamen.cli.commands.deploy import deploy_run
    from stamen.simulations.preflight import check_config

    try:
        checked = check_config(run_config(config, overrides, output_dir=None if out is None else os.fspath(out)))
    except ValueError as error:
        raise ValueError(one_line(error)) from None
    address = superlink or f"127.0.0.1:{SUPERLINK_PORT}"
    deployed = deploy_run(checked, address, Path(ca), stream=progress)
    if deployed.code != 0:
        raise RunFailed(f"the deployed run did not finish (flwr exit code {deployed.code}); see the SuperLink's logs")
    return deployed
