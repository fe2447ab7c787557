"""FedAvg client: start from the global model, train locally, send the weights back.

The local step is the run's task's (:mod:`stamen.client.tasks`): its client part's ``fit``.
"""

from __future__ import annotations

from flwr.app import ConfigRecord

from stamen.client.algorithms import ClientAlgorithm, local_step
from stamen.client.job import LocalJob
from stamen.client.tasks import client_task
from stamen.models import NodeClassifier


class FedAvgClient(ClientAlgorithm):
    """Local epochs of Adam on the received weights (the hooks' defaults do the rest)."""

    @local_step
    def train(self, model: NodeClassifier, job: LocalJob, round_config: ConfigRecord) -> float:
        optimizer = job.optimizer(model)
        loss = client_task(job.config.task).fit(model, job, optimizer, self.proximal_mu(round_config))
        job.keep_optimizer(optimizer)
        return loss

    def proximal_mu(self, round_config: ConfigRecord) -> float:
        """The strength of a proximal term around the received weights (FedAvg: none)."""
        return 0.0


PART = FedAvgClient()
