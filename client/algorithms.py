"""The client side of every algorithm, by run-config name.

Each algorithm is one module with ``USES_GLOBAL_MODEL`` and
``train(model, job, round_config) -> float`` (the mean training loss).
"""

from __future__ import annotations

from types import ModuleType

from client import fedavg, fedprox, local

CLIENT_ALGORITHMS: dict[str, ModuleType] = {"fedavg": fedavg, "fedprox": fedprox, "local": local}


def client_algorithm(name: str) -> ModuleType:
    if name not in CLIENT_ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(CLIENT_ALGORITHMS)}")
    return CLIENT_ALGORITHMS[name]
