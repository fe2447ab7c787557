"""FedProx client: FedAvg's local training plus a proximal term around the global model.

The strength ``proximal-mu`` comes from the server's round config (Flower's FedProx
strategy puts it there), so the server decides it for everyone.
"""

from __future__ import annotations

from flwr.app import ConfigRecord

from client.fedavg import FedAvgClient
from client.job import LocalJob
from models import NodeClassifier


class FedProxClient(FedAvgClient):
    def train(  # type: ignore[override]
        self, model: NodeClassifier, job: LocalJob, round_config: ConfigRecord
    ) -> float:
        mu = float(round_config["proximal-mu"])  # the server's FedProx sends it every round: no client default
        return super().train(model, job, round_config, proximal_mu=mu)


PART = FedProxClient()
