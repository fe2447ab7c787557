"""The run-config keys whose value a plug-in registry supplies, with that registry: what an engine checks
(:func:`stamen.common.registry.check_engine`) before it starts processes that load plug-ins from entry points
alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stamen.common.registry import Registry
from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.tasks import TASKS
from stamen.graphs.names import DATASET_SPECS, PARTITIONER_SPECS, dataset_parts
from stamen.models.names import MODEL_SPECS

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig


def plugin_choices(config: RunConfig) -> dict[str, tuple[Registry[Any], str]]:
    """Each plug-in key of ``config`` with its registry and the name the run gives it; a dataset by its spec's
    name (a form's prefix, ``npz:``), each part of a dataset list under its own key."""
    parts = dataset_parts(config.dataset)
    datasets = {
        "dataset" if len(parts) == 1 else f"dataset part {number}": (DATASET_SPECS, _spec_name(part))
        for number, part in enumerate(parts, start=1)
    }
    return {
        **datasets,
        "task": (TASKS, config.task),
        "algorithm": (ALGORITHMS, config.algorithm),
        "model": (MODEL_SPECS, config.model),
        "partitioner": (PARTITIONER_SPECS, config.partitioner),
    }


def _spec_name(dataset: str) -> str:
    """The registry name of single dataset ``dataset``: itself, or its form's prefix (``npz:``)."""
    prefix, colon, _ = dataset.partition(":")
    return prefix + colon if colon else dataset
