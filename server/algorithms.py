"""The server side of every algorithm, by run-config name.

Each algorithm is one module with ``AGGREGATES`` (does it keep a global model?) and
``make_strategy(config) -> flwr.serverapp.strategy.Strategy``.
"""

from __future__ import annotations

from types import ModuleType

from server import fedavg, fedlog, fedprox, local

SERVER_ALGORITHMS: dict[str, ModuleType] = {
    "fedavg": fedavg,
    "fedprox": fedprox,
    "local": local,
    "fedlog": fedlog,
}


def server_algorithm(name: str) -> ModuleType:
    if name not in SERVER_ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(SERVER_ALGORITHMS)}")
    return SERVER_ALGORITHMS[name]
