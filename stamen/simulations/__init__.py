"""The engines and transports: one typed entry of a run, :func:`run` (:mod:`stamen.simulations.runner`).

    from stamen.simulations import Engine, FederationConfig, run
    from stamen.contract.provenance import Provenance
    from stamen.contract.run_config import RunConfig

    result = run(RunConfig.from_mapping({"csbm-nodes": 300}), federation=FederationConfig(num_supernodes=3),
                 engine=Engine.INPROCESS, provenance=Provenance.of_command("my-script"))

The names load on first use (PEP 562): a process that imports one module of this room (a
SuperNode's launcher) does not pull in the engines.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "Engine": "stamen.simulations.runner",
    "FederationConfig": "stamen.simulations.federation_config",
    "ProgressMode": "stamen.simulations.runner",
    "RunResult": "stamen.simulations.runner",
    "run": "stamen.simulations.runner",
}

if TYPE_CHECKING:
    from stamen.simulations.federation_config import FederationConfig
    from stamen.simulations.runner import Engine, ProgressMode, RunResult, run


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'stamen.simulations' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = ["Engine", "FederationConfig", "ProgressMode", "RunResult", "run"]
