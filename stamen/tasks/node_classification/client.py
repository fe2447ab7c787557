"""Node classification's client part: the model, the local step, the figures, DP-SGD, the data check.

The model is the run's encoder with a linear head (:func:`stamen.models.build_model`), built once per
process from the run's seed; a local step is :func:`stamen.models.training.fit` over the training nodes;
the figures are the counts of validation and test nodes (and of each evaluation setting's nodes) classified
right (:func:`stamen.client.handlers.evaluation_counts`); DP-SGD trains the decoupled model's per-node
rows (:func:`stamen.client.privacy.train_private`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import torch

from stamen.client.handlers import evaluation_counts
from stamen.client.job import LocalJob
from stamen.client.privacy import PrivateTraining, train_private
from stamen.client.tasks import ClientTask, check_classes
from stamen.contract.run_config import RunConfig
from stamen.graphs.federation import Federation
from stamen.models import NodeClassifier, build_model
from stamen.models.training import evaluate, fit

if TYPE_CHECKING:
    from opacus.accountants import RDPAccountant


class NodeClassificationTask(ClientTask):
    """See the module docstring."""

    def initial_model(self, job: LocalJob) -> tuple[NodeClassifier, dict[str, torch.Tensor]]:
        c = job.config
        return initial_classifier(
            c.model, job.data.num_features, int(job.data.num_classes), c.hidden, c.num_layers, c.dropout,
            c.seed_of(c.model_seed),
            job.device,
        )  # fmt: skip

    def fit(self, model: torch.nn.Module, job: LocalJob, optimizer: torch.optim.Optimizer, proximal_mu: float) -> float:
        return fit(model, job.data, job.config.local_epochs, optimizer, proximal_mu)  # type: ignore[arg-type]

    def figures(self, model: torch.nn.Module, job: LocalJob, which: str) -> dict[str, float]:
        return evaluation_counts(evaluate(model, job.data, job.new_client), which)  # type: ignore[return-value]

    def train_private(
        self,
        model: torch.nn.Module,
        job: LocalJob,
        optimizer: torch.optim.Optimizer,
        accountant: RDPAccountant,
        generator: torch.Generator,
    ) -> PrivateTraining:
        return train_private(model, job.data, job.config, optimizer, accountant, generator)  # type: ignore[arg-type]

    def trains_together(self) -> bool:
        """Its own local step and figures batch across clients (:mod:`stamen.models.together`); a subclass
        with a local step or figures of its own trains alone."""
        return type(self).fit is NodeClassificationTask.fit and type(self).figures is NodeClassificationTask.figures

    def check_data(self, config: RunConfig, federation: Federation) -> None:
        check_classes(config, federation)


@functools.lru_cache(maxsize=8)
def initial_classifier(
    name: str,
    in_dim: int,
    num_classes: int,
    hidden: int,
    num_layers: int,
    dropout: float,
    seed: int,
    device: torch.device,
) -> tuple[NodeClassifier, dict[str, torch.Tensor]]:
    """The node classifier of the run, built from ``seed``, and its initial weights (built once per process)."""
    torch.manual_seed(seed)
    model = build_model(name, in_dim, num_classes, hidden=hidden, num_layers=num_layers, dropout=dropout)
    model = model.to(device)
    return model, {key: value.detach().clone() for key, value in model.state_dict().items()}


PART = NodeClassificationTask()
