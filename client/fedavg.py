"""FedAvg client: start from the global model, train locally, send the weights back."""

from __future__ import annotations

from flwr.app import ConfigRecord

from client.job import LocalJob
from models import NodeClassifier
from models.training import fit

USES_GLOBAL_MODEL = True


def train(model: NodeClassifier, job: LocalJob, round_config: ConfigRecord, proximal_mu: float = 0.0) -> float:
    optimizer = job.optimizer(model)
    loss = fit(model, job.data, job.config.local_epochs, optimizer, proximal_mu=proximal_mu)
    job.keep_optimizer(optimizer)
    return loss
