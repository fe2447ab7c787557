"""Node classification (the default task): a class per node.

Each client trains the run's model, an encoder with a linear head (:mod:`stamen.models.node_classifier`),
on its training nodes and is scored by the number of its validation and test nodes classified right,
which the server pools into accuracies (:attr:`stamen.contract.tasks.Pooling.COUNTS`); the evaluation
settings of local generalisation (unseen nodes, missing classes, a new client) are scored the same way.
The client part is :mod:`stamen.tasks.node_classification.client`. DP-SGD needs a decoupled model
(propagation, then a per-node classifier: each node's gradient is its own).

This module is the task's spec only (no torch): the run config's checks read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stamen.contract.tasks import DEFAULT_TASK, TaskSpec
from stamen.models.names import check_decoupled

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig


def _check(config: RunConfig) -> None:
    """DP-SGD clips per-node gradients, which only a decoupled model has."""
    if config.privacy == "dp-sgd":
        check_decoupled(config.model)


SPEC = TaskSpec(
    DEFAULT_TASK,
    "a class per node (accuracy)",
    client="stamen.tasks.node_classification.client",
    check=_check,
)
