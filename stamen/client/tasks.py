"""The client part of a learning task: the one protocol the ClientApp calls, and its loader.

A task's spec (:class:`stamen.contract.tasks.TaskSpec`) names its client module, whose ``PART`` is a
:class:`ClientTask`: node classification's (:mod:`stamen.tasks.node_classification.client`) as every
other's. The ClientApp asks the task, not the algorithm, what the model is, how a local step trains it,
how it is scored and what its sizes are, so an algorithm whose client part trains FedAvg's local step
(FedAvg, FedProx, local, Flower's strategies) runs any task the registry lets it.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

import torch

from stamen.contract import protocol as p
from stamen.contract.tasks import TASKS

if TYPE_CHECKING:
    from opacus.accountants import RDPAccountant

    from stamen.client.job import LocalJob
    from stamen.client.privacy import PrivateTraining
    from stamen.contract.run_config import RunConfig
    from stamen.graphs.federation import Federation


class ClientTask:
    """What a task does on a client (see the module docstring). A task implements the first four; the others
    have defaults: no DP-SGD, no batched training in process, no check of the clients' data."""

    def initial_model(self, job: LocalJob) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
        """This process's model of the run (built once) and the run's seeded initial weights."""
        raise NotImplementedError

    def fit(self, model: torch.nn.Module, job: LocalJob, optimizer: torch.optim.Optimizer, proximal_mu: float) -> float:
        """``local-epochs`` local steps (FedProx's term when ``proximal_mu > 0``); the mean training loss."""
        raise NotImplementedError

    def figures(self, model: torch.nn.Module, job: LocalJob, which: str) -> dict[str, float]:
        """``model``'s figures on the client's evaluation data, as METRICS entries of ``which`` model
        (``global`` or ``local``): the counts or figures its spec's pooling pools."""
        raise NotImplementedError

    def sizes(self, job: LocalJob) -> dict[str, int]:
        """The reply's sizes: NUM_EXAMPLES (the averaging weight), NUM_VAL, NUM_TEST and the task's own (default:
        the records of the client's train, validation and test masks, its nodes or its graphs)."""
        data = job.data
        return {
            p.NUM_EXAMPLES: int(data.train_mask.sum()),
            p.NUM_VAL: int(data.val_mask.sum()),
            p.NUM_TEST: int(data.test_mask.sum()),
        }

    def train_private(
        self,
        model: torch.nn.Module,
        job: LocalJob,
        optimizer: torch.optim.Optimizer,
        accountant: RDPAccountant,
        generator: torch.Generator,
    ) -> PrivateTraining:
        """One round of DP-SGD on the client's records (:mod:`stamen.client.privacy`). Only a task whose spec
        admits ``dp-sgd`` has it."""
        raise NotImplementedError(f"task {job.config.task!r} has no per-record DP-SGD (its spec says why)")

    def trains_together(self) -> bool:
        """Whether the in-process engine may train and evaluate this task's clients as one batch
        (:mod:`stamen.client.together`): only where the local step and the figures are those that
        :mod:`stamen.models.together` computes to the bit (node classification's own)."""
        return False

    def check_data(self, config: RunConfig, federation: Federation) -> None:
        """What the task needs of the clients' data, before anything is written (ValueError in one line naming
        the client and what to do); the run's pre-flight calls it."""


@functools.cache
def client_task(name: str) -> ClientTask:
    """The client part of task ``name``."""
    module = TASKS.lookup(name, "task").client
    part = getattr(importlib.import_module(module), "PART", None)
    if not isinstance(part, ClientTask):
        raise TypeError(f"{module} (the client part of task {name!r}) sets no PART = a ClientTask")
    return part


def check_classes(config: RunConfig, federation: Federation) -> None:
    """Two classes or more to classify (ValueError in one line): a classification task's data check."""
    labels = federation.graph.y
    classes = int(labels.unique().numel()) if labels is not None else 0
    if classes < 2:
        raise ValueError(
            f"dataset {config.dataset!r} has {classes} class{'es' if classes != 1 else ''} of {config.task}; "
            "classification needs at least two: give a dataset with two classes or more"
        )
