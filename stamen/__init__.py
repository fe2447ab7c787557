"""Stamen's Python API: the calls the ``stamen`` command makes, with results as objects.

    import stamen

    run = stamen.run({"num-server-rounds": 20, "csbm-nodes": 900}, clients=3)
    run.rows[-1]["global_test_acc"], run.summary["final"], run.dir
    stamen.load(run.dir).to_pandas()
    stamen.sweep(grid={"lr": [0.01, 0.05]}, seeds=[0, 1], num_server_rounds=20).rows
    stamen.unlearn(run, "class:1", methods=["wash"])[0].result["mean"]
    stamen.certify(dataset="csbm-paper", arch="gcn", budgets=[1, 2], out="cert").certified_accuracy("gcn")
    stamen.tune(space={"lr": "log:1e-3..1e-1"}, trials=20, name="lr", num_server_rounds=20).best_params
    stamen.deploy.local({"num-server-rounds": 5, "run-name": "d"}, clients=3).run_dir
    stamen.audit(csbm_nodes=300, dp_sgd_epsilons=[4], client_dp_epsilons=[]).results[1].lower_bound

See docs/api.md. Bad input is a ``ValueError`` whose message is the line the command prints.
"""

from __future__ import annotations

import importlib
import types
from typing import TYPE_CHECKING, Any

# The public names and the modules that define them. They load on first use (PEP 562), so that importing
# one room (``stamen.server.app`` in a Flower process, ``stamen.client.app`` in a Ray actor) does not pull
# in the whole API.
_EXPORTS = {
    "AlgorithmSpec": "stamen.contract.algorithms",
    "AuditReport": "stamen.cli.commands.audit",
    "AuditResult": "stamen.cli.commands.audit",
    "AuditSettings": "stamen.cli.commands.audit",
    "audit": "stamen.auditing",
    "Certificates": "stamen.certifying",
    "deploy": "stamen.deploy",
    "Deployed": "stamen.cli.commands.deploy",
    "ModelSpec": "stamen.models.names",
    "option": "stamen.contract.keys",
    "DatasetSpec": "stamen.graphs.names",
    "register_dataset": "stamen.graphs.names",
    "PartitionerSpec": "stamen.graphs.names",
    "register_partitioner": "stamen.graphs.names",
    "Pooling": "stamen.contract.tasks",
    "TaskSpec": "stamen.contract.tasks",
    "register_task": "stamen.contract.tasks",
    "register_algorithm": "stamen.contract.algorithms",
    "register_model": "stamen.models.names",
    "EnvironmentFailed": "stamen.simulations.errors",
    "Run": "stamen.runs",
    "load": "stamen.runs",
    "run": "stamen.runs",
    "RunFailed": "stamen.simulations.errors",
    "RunInterrupted": "stamen.simulations.errors",
    "RunStatus": "stamen.server.rundir",
    "Sweep": "stamen.sweeps",
    "sweep": "stamen.sweeps",
    "Tuned": "stamen.tuning",
    "tune": "stamen.tuning",
    "Unlearned": "stamen.unlearning",
}

if TYPE_CHECKING:
    from stamen import deploy
    from stamen.auditing import audit
    from stamen.certifying import Certificates
    from stamen.cli.commands.audit import AuditReport, AuditResult, AuditSettings
    from stamen.cli.commands.deploy import Deployed
    from stamen.contract.algorithms import AlgorithmSpec, register_algorithm
    from stamen.contract.keys import option
    from stamen.contract.tasks import Pooling, TaskSpec, register_task
    from stamen.graphs.names import DatasetSpec, PartitionerSpec, register_dataset, register_partitioner
    from stamen.models.names import ModelSpec, register_model
    from stamen.runs import Run, load, run
    from stamen.server.rundir import RunStatus
    from stamen.simulations.errors import EnvironmentFailed, RunFailed, RunInterrupted
    from stamen.sweeps import Sweep, sweep
    from stamen.tuning import Tuned, tune
    from stamen.unlearning import Unlearned


class _CallableRoom(types.ModuleType):
    """A room that is also a call of the API: ``stamen.certify(...)`` certifies (:func:`stamen.certifying.certify`)
    while ``stamen.certify.ntk`` stays the library's module; ``stamen.unlearn`` likewise. Python binds a subpackage
    to its parent's attribute of the same name, so the room and the call must be one object."""

    _call: tuple[str, str]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, name = type(self)._call
        return getattr(importlib.import_module(module), name)(*args, **kwargs)


def _callable_room(room: str, module: str, name: str) -> None:
    kind = type(f"{room}_room", (_CallableRoom,), {"_call": (module, name), "__module__": __name__})
    importlib.import_module(f"stamen.{room}").__class__ = kind  # both rooms' __init__ import nothing heavy


_callable_room("certify", "stamen.certifying", "certify")
_callable_room("unlearn", "stamen.unlearning", "unlearn")


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'stamen' has no attribute {name!r}")
    module = importlib.import_module(_EXPORTS[name])
    value = module if module.__name__ == f"{__name__}.{name}" else getattr(module, name)  # stamen.deploy: a module
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "AlgorithmSpec",
    "AuditReport",
    "AuditResult",
    "AuditSettings",
    "Certificates",
    "DatasetSpec",
    "Deployed",
    "EnvironmentFailed",
    "Run",
    "RunFailed",
    "RunInterrupted",
    "RunStatus",
    "Sweep",
    "Tuned",
    "Unlearned",
    "audit",
    "certify",
    "deploy",
    "ModelSpec",
    "PartitionerSpec",
    "Pooling",
    "TaskSpec",
    "load",
    "option",
    "register_algorithm",
    "register_dataset",
    "register_model",
    "register_partitioner",
    "register_task",
    "run",
    "sweep",
    "tune",
    "unlearn",
]
