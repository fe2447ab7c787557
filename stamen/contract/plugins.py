"""The run-config keys whose value a plug-in registry supplies, with that registry: what an engine checks
(:func:`stamen.common.registry.check_engine`) before it starts processes that load plug-ins from entry points
alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stamen.common.registry import Registry
from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.tasks import TASKS
from stamen.graphs.names import PARTITIONER_SPECS
from stamen.models.names import MODEL_SPECS

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig


def plugin_choices(config: RunConfig) -> dict[str, tuple[Registry[Any], str]]:
    """Each plug-in key of ``config`` with its registry and the name the run gives it."""
    return {
        "task": (TASKS, config.task),
        "algorithm": (ALGORITHMS, config.algorithm),
        "model": (MODEL_SPECS, config.model),
        "partitioner": (PARTITIONER_SPECS, config.partitioner),
    }
