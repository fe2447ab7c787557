"""The client part of a learning task other than node classification: its contract and its loader.

A task's spec (:mod:`stamen.contract.tasks`) names its client module, whose ``PART`` is a
:class:`ClientTask`; node classification names none and keeps the handlers' own path
(:mod:`stamen.models.training`). The ClientApp asks the task, not the algorithm, what the model is,
how a local step trains it, how it is scored and what its sizes are, so an algorithm whose
client part trains FedAvg's local step (FedAvg, FedProx, local, Flower's strategies) runs any
task the registry lets it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch_geometric.data import Data

from stamen.contract.tasks import TASKS

if TYPE_CHECKING:
    from stamen.client.job import LocalJob


class ClientTask:
    """What a task does on a client (see the module docstring)."""

    def initial_model(self, job: LocalJob) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
        """This process's model of the run (built once) and the run's seeded initial weights."""
        raise NotImplementedError

    def fit(self, model: torch.nn.Module, job: LocalJob, optimizer: torch.optim.Optimizer, proximal_mu: float) -> float:
        """``local-epochs`` local steps (FedProx's term when ``proximal_mu > 0``); the mean training loss."""
        raise NotImplementedError

    def figures(self, model: torch.nn.Module, job: LocalJob, which: str) -> dict[str, float]:
        """``model``'s figures on the client's evaluation data, as METRICS entries of ``which`` model
        (``global`` or ``local``)."""
        raise NotImplementedError

    def sizes(self, job: LocalJob) -> dict[str, int]:
        """The reply's sizes: NUM_EXAMPLES (the averaging weight), NUM_VAL, NUM_TEST and the task's own."""
        raise NotImplementedError

    def private_records(self, job: LocalJob) -> Sequence[Data]:
        """The client's training records for DP-SGD, each one graph whose loss depends on it alone
        (:func:`stamen.client.privacy.train_private_graphs`). Only a task whose spec admits ``dp-sgd`` has them."""
        raise NotImplementedError(
            f"task {job.config.task!r} has no per-record DP-SGD (stamen/contract/tasks.py says why)"
        )


@functools.cache
def client_task(name: str) -> ClientTask | None:
    """The client part of task ``name`` (None: node classification's built-in path)."""
    module = TASKS[name].client
    if not module:
        return None
    part = getattr(importlib.import_module(module), "PART", None)
    if not isinstance(part, ClientTask):
        raise TypeError(f"{module} (the client part of task {name!r}) sets no PART = a ClientTask")
    return part
