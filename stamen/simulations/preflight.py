"""Every check a run can pass before Flower starts: one line and exit 2, in seconds.

``stamen run`` (and the benches and deployments that start runs) call :func:`prepare`
before any process is started. It checks the run config with the one validation that
the ServerApp of a plain ``flwr run`` also runs (:meth:`stamen.contract.run_config.RunConfig.from_flower`:
keys, types, ranges, names from the registries, rules between keys), then what only
the data and the federation can tell: the federation settings, the data (loaded and
partitioned once, cached for the clients), the output folder or the checkpoint to
resume, the unlearning request against the federation's clients and classes, and
whether a DP target epsilon can be reached. Nothing on disk changes here except the
partition cache.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stamen.client.tasks import client_task
from stamen.common.registry import check_engine
from stamen.contract.plugins import plugin_choices
from stamen.contract.requests import parse_request
from stamen.contract.run_config import RunConfig
from stamen.contract.tasks import examples
from stamen.contract.tracking import missing_tracker
from stamen.graphs import build_federation
from stamen.server.rundir import RunDirectory, RunStatus, check_run_name
from stamen.simulations.cluster import check_cluster_federation, check_ray_address, cluster_environment
from stamen.simulations.federation_config import FederationConfig, check_federation
from stamen.simulations.flower import APP_CONFIG_DIR
from stamen.simulations.overrides import parse_overrides
from stamen.simulations.size_check import check_size

if TYPE_CHECKING:
    from stamen.graphs.federation_data import Federation


@dataclass(frozen=True)
class PreparedRun:
    """A run that passed every check.

    Attributes:
        config: the run config, with ``output-dir`` and ``run-name`` fixed to the run directory.
        federation: Flower's federation config (``num-supernodes``, resources).
        run_dir: where the run writes (for a resumed run, the run it continues).
        nothing_left: a resumed run that already finished all its rounds.
        ray_address: the Ray cluster the Flower simulation joins (``""``: a Ray instance of its own).
        partition_digest: the digest of the partition checked here, which every client compares with its own.
    """

    config: RunConfig
    federation: dict[str, object]
    run_dir: RunDirectory
    nothing_left: bool = False
    ray_address: str = ""
    partition_digest: str = ""

    @property
    def num_clients(self) -> int:
        """The number of clients (``num-supernodes``, checked a whole number >= 1)."""
        value = self.federation["num-supernodes"]
        assert isinstance(value, int)
        return value

    def environment(self) -> dict[str, str]:
        """What this run adds to Flower's environment (:func:`stamen.simulations.cluster.cluster_environment`)."""
        return cluster_environment(self.ray_address, self.partition_digest)


def default_run_config() -> dict[str, object]:
    # on use: flwr stays out of this module's import
    from stamen.simulations.flower_internals.project_config import get_project_config

    return dict(get_project_config(APP_CONFIG_DIR)["tool"]["flwr"]["app"]["config"])


def prepare(
    run_overrides: list[str], federation_overrides: list[str], ray_address: str = "", engine: str = "inprocess"
) -> PreparedRun:
    """The command line's ``-c`` and ``--federation-config`` items, parsed here (the only place strings are),
    then :func:`prepare_mapping`."""
    run = parse_overrides(run_overrides)
    federation = parse_overrides(federation_overrides, "federation config", files=False)
    return prepare_mapping(run, federation, ray_address, engine)


def prepare_mapping(
    run_config: Mapping[str, Any],
    federation_config: Mapping[str, Any],
    ray_address: str = "",
    engine: str = "inprocess",
) -> PreparedRun:
    """Run-config and federation keys (either spelling) as the typed configs, then :func:`prepare_config`."""
    config = check_config(RunConfig.from_mapping(run_config))
    federation = FederationConfig.from_mapping(federation_config, on_cluster=bool(ray_address))
    return prepare_config(config, federation, ray_address, engine)


def check_config(config: RunConfig) -> RunConfig:
    """What a run checks of its config beyond :meth:`RunConfig.from_flower`: ``run-name``'s path and the
    trackers' packages. ValueError in one line."""
    check_run_name(config.run_name)
    missing = missing_tracker(config.tracking)
    if missing:
        raise ValueError(missing)
    return config


def prepare_config(
    config: RunConfig, federation: FederationConfig, ray_address: str = "", engine: str = "inprocess"
) -> PreparedRun:
    """Check everything that can be checked before Flower starts; fix the run directory.

    ``ray_address``: the Ray cluster the Flower simulation joins (:mod:`stamen.simulations.cluster`), checked here:
    ``HOST:PORT`` where something listens, and no federation key that a cluster refuses. ``engine``: the engine the
    run goes to; a plug-in registered in this process only is refused for an engine of other processes, before the
    data is read (:func:`stamen.common.registry.check_engine`).
    """
    # on use: flwr, numpy stay out of this module's import
    from stamen.server.app import resume_target

    check_config(config)
    check_engine(plugin_choices(config), engine)  # another engine's processes see entry-point plug-ins alone
    flower = federation.to_flower()
    if ray_address:
        check_cluster_federation(flower)
    num_clients = check_federation(flower, on_cluster=bool(ray_address))
    if ray_address:
        ray_address = check_ray_address(ray_address)
    if config.min_clients > num_clients:
        raise ValueError(f"min-clients={config.min_clients} exceeds num-supernodes={num_clients}; lower min-clients")
    nothing_left = False
    if config.resume_from:
        run_dir, checkpoint = resume_target(config)
        finished = run_dir.status().get("status") == RunStatus.FINISHED.value
        nothing_left = finished and checkpoint.round >= config.num_server_rounds
        if nothing_left:
            run_dir.finished_rows()  # a finished run whose last row was cut afterwards: no resume writes it again
    else:
        run_dir = RunDirectory.plan(config)
    digest = check_with_data(config, num_clients)
    config = dataclasses.replace(config, output_dir=str(run_dir.path.parent), run_name=run_dir.path.name)
    return PreparedRun(config, flower, run_dir, nothing_left, ray_address, digest)


def check_with_data(config: RunConfig, num_clients: int) -> str:
    """The checks that need the clients' data: the unlearning request and the privacy budget. Returns the
    partition's digest (:attr:`stamen.graphs.federation_data.Federation.digest`), which the clients check theirs
    against."""
    with warnings.catch_warnings():  # Opacus's accountant warns about its alpha grid while searching
        warnings.simplefilter("ignore")
        return _check_with_data(config, num_clients)


def _check_with_data(config: RunConfig, num_clients: int) -> str:
    missing = missing_tracker(config.tracking)
    if missing:
        raise ValueError(missing)
    if config.data_root and not Path(config.data_root).expanduser().is_dir():
        raise FileNotFoundError(f"data-root={config.data_root!r} is not a folder; give the folder holding the datasets")

    check_size(config)  # before the graph is read or generated
    federation = build_federation(config.federation(num_clients))
    check_task_data(config, federation)
    if config.unlearn_request:
        parse_request(config.unlearn_request, num_clients, int(federation.graph.num_classes))
    if config.privacy == "client-dp":
        # on use: flwr, numpy stay out of this module's import
        from stamen.server.privacy import client_noise_multiplier

        client_noise_multiplier(config, num_clients)
    if config.privacy == "dp-sgd":
        # on use: torch, torch_geometric, flwr, scipy, numpy stay out of this module's import
        from stamen.client.privacy import noise_multiplier, sample_rate

        for index, client in enumerate(federation.clients):  # train_mask: over nodes, or over a graph set's graphs
            try:
                sample_rate(int(client.train_mask.sum()), config.dp_batch_size, examples(config.task))
                noise_multiplier(config, int(client.train_mask.sum()))
            except ValueError as error:
                raise ValueError(f"client {index}: {error}") from None
    # on use: torch, torch_geometric, flwr, scipy, numpy stay out of this module's import
    from stamen.client.attacks import check_attack
    from stamen.server.algorithms import server_algorithm

    check_attack(config, num_clients)  # malicious ids in range, a benign client left
    server_algorithm(config.algorithm).check_federation(config, num_clients)  # e.g. Krum's 2f+3 clients
    return federation.digest


def check_task_data(config: RunConfig, federation: Federation) -> None:
    """What the run's task needs of the clients' data, before anything is written (ValueError in one line): its
    client part's check (:meth:`stamen.client.tasks.ClientTask.check_data`)."""
    client_task(config.task).check_data(config, federation)
