"""FedAvg client: start from the global model, train locally, send the weights back."""

from __future__ import annotations

from flwr.app import ConfigRecord

from client.algorithms import ClientAlgorithm
from client.job import LocalJob
from models import NodeClassifier
from models.training import fit


class FedAvgClient(ClientAlgorithm):
    """Local epochs of Adam on the received weights (the hooks' defaults do the rest)."""

    def train(
        self, model: NodeClassifier, job: LocalJob, round_config: ConfigRecord, proximal_mu: float = 0.0
    ) -> float:
        optimizer = job.optimizer(model)
        loss = fit(model, job.data, job.config.local_epochs, optimizer, proximal_mu=proximal_mu)
        job.keep_optimizer(optimizer)
        return loss


PART = FedAvgClient()
