"""Flower's federation config of a simulated run, typed: the clients and their resources.

``stamen run --federation-config "num-supernodes=5 client-resources-num-cpus=1"`` and
:func:`stamen.run`'s ``clients=`` and ``federation=`` both become a :class:`FederationConfig`
(:meth:`FederationConfig.from_mapping`, checked by :func:`check_federation`);
:meth:`FederationConfig.to_flower` gives the mapping ``flwr run --federation-config`` takes, at that
transport's boundary only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stamen.common.suggest import did_you_mean
from stamen.contract.key_spelling import kebab_keys, key_name
from stamen.simulations.cluster import check_cluster_federation
from stamen.simulations.flower import FEDERATION_KEYS

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


def check_federation(federation: dict[str, object], on_cluster: bool = False) -> int:
    """Flower's federation config: only the keys Flower's simulation accepts (:data:`FEDERATION_KEYS`,
    a suggestion for a typo), each of its type; returns the number of clients. ValueError in one line.
    ``on_cluster``: the run joins a Ray cluster, whose size no ``init-args-*`` key sets (none is suggested)."""
    unknown = [key for key in federation if key not in FEDERATION_KEYS]
    if len(unknown) == 1:
        key = unknown[0]
        close = did_you_mean(key, FEDERATION_KEYS)
        known = "" if close else f"; the keys are: {', '.join(FEDERATION_KEYS)}"
        raise ValueError(f"unknown federation-config key {key!r}{close}{known}")
    if unknown:
        named = ", ".join(f"{key!r}{did_you_mean(key, FEDERATION_KEYS, ' (')}".replace("?", "?)") for key in unknown)
        raise ValueError(f"unknown federation-config keys {named}; the keys are: {', '.join(FEDERATION_KEYS)}")
    num_clients = federation["num-supernodes"]
    if not isinstance(num_clients, int) or isinstance(num_clients, bool) or num_clients < 1:
        raise ValueError(f"num-supernodes must be a positive integer, got {num_clients!r}")
    cpus = federation.get("client-resources-num-cpus", 1)
    if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
        more = "start the cluster's nodes with more --num-cpus" if on_cluster else "raise init-args-num-cpus instead"
        raise ValueError(
            f"client-resources-num-cpus must be a whole number of CPUs >= 1 (Flower 1.42's simulation fails on "
            f"{cpus!r}); to run more clients at once than cores, {more}"
        )
    for key, value in federation.items():
        problem = _federation_value_problem(FEDERATION_KEYS[key], value)
        if problem:
            raise ValueError(f"federation-config key {key!r} must be {problem}, got {value!r}")
    return num_clients


def _federation_value_problem(kind: type, value: object) -> str:
    """What a value of ``kind`` must be, in words, when ``value`` is not that (``""``: it is)."""
    if kind is bool:
        return "" if isinstance(value, bool) else "true or false"
    if kind is str:
        return "" if isinstance(value, str) else "a quoted string"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "a whole number >= 0" if kind is int else "a finite number >= 0"
    if kind is int:
        return "" if isinstance(value, int) and value >= 0 else "a whole number >= 0"
    return "" if math.isfinite(value) and value >= 0 else "a finite number >= 0"
