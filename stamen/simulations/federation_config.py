"""Flower's federation config of a simulated run, typed: the clients and their resources.

``stamen run --federation-config "num-supernodes=5 client-resources-num-cpus=1"`` and
:func:`stamen.run`'s ``clients=`` and ``federation=`` both become a :class:`FederationConfig`
(:meth:`FederationConfig.from_mapping`, checked by :func:`stamen.simulations.preflight.check_federation`);
:meth:`FederationConfig.to_flower` gives the mapping ``flwr run --federation-config`` takes, at that
transport's boundary only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stamen.contract.key_spelling import kebab_keys, key_name
from stamen.simulations.cluster import check_cluster_federation

# Stamen's simulation defaults: ten clients, one CPU each (Flower's own default of two
# CPUs per client would run one client at a time on a two-core machine).
FEDERATION_DEFAULTS: dict[str, object] = {"num-supernodes": 10, "client-resources-num-cpus": 1}


@dataclass(frozen=True)
class FederationConfig:
    """The federation of a simulated run (Flower's ``SimulationConfig`` fields that Stamen passes on).

    Attributes:
        num_supernodes: the number of clients (``--clients``).
        client_resources_num_cpus: CPUs each client's Ray actor holds.
        client_resources_num_gpus: the share of a GPU each client holds (``None``: Flower's default, none).
        backend, verbose, init_args_num_cpus, init_args_num_gpus, init_args_logging_level,
            init_args_log_to_driver: Flower's simulation options of these names (``None``: Flower's default).
    """

    num_supernodes: int = 10
    client_resources_num_cpus: int = 1
    client_resources_num_gpus: float | None = None
    backend: str | None = None
    verbose: bool | None = None
    init_args_num_cpus: int | None = None
    init_args_num_gpus: int | None = None
    init_args_logging_level: str | None = None
    init_args_log_to_driver: bool | None = None

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], on_cluster: bool = False) -> FederationConfig:
        """Check and build from federation keys in either spelling over :data:`FEDERATION_DEFAULTS`; ValueError in
        one line (an unknown key with a suggestion, a value of the wrong type). ``on_cluster``: the run joins a Ray
        cluster, which refuses the keys that size a Ray instance of the run's own."""
        # on use: an import circle (stamen.simulations.preflight imports this module)
        from stamen.simulations.preflight import check_federation

        given = dict(FEDERATION_DEFAULTS)
        given.update(kebab_keys({str(key): value for key, value in values.items()}, "federation config"))
        if on_cluster:
            check_cluster_federation(given)
        check_federation(given, on_cluster=on_cluster)
        return cls(**{key.replace("-", "_"): value for key, value in given.items()})  # type: ignore[arg-type]

    def to_flower(self) -> dict[str, object]:
        """The keys set, as ``flwr run --federation-config`` names them."""
        return {
            key_name(field.name): getattr(self, field.name)
            for field in dataclasses.fields(self)
            if getattr(self, field.name) is not None
        }
