"""FedAvg client: start from the global model, train locally, send the weights back."""

from __future__ import annotations

from flwr.app import ConfigRecord

from client.algorithms import ClientAlgorithm
from client.job import LocalJob
from models import NodeClassifier
from models.training import fit


class FedAvgClient(ClientAlgorithm):
    """Local epochs of Adam on the received weights (the hooks' defaults do the rest)."""

    def train(self, model: NodeClassifier, job: LocalJob, round_config: ConfigRecord) -> float:
        optimizer = job.optimizer(model)
        loss = fit(model, job.data, job.config.local_epochs, optimizer, self.proximal_mu(round_config))
        job.keep_optimizer(optimizer)
        return loss

    def proximal_mu(self, round_config: ConfigRecord) -> float:
        """The strength of a proximal term around the received weights (FedAvg: none)."""
        return 0.0


PART = FedAvgClient()
