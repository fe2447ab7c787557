"""FedGTA client: FedAvg's local training, then label-propagation moments and smoothing confidence.

Li et al., VLDB 2024 (the math: :mod:`stamen.models.label_moments`, :mod:`stamen.server.fedgta`).
The client trains its received personalised aggregate like FedAvg, then propagates
its model's soft predictions from its training nodes over its graph and uploads, with
the weights, the mixed moments of the propagated labels and its local smoothing
confidence: statistics of predictions, never a node's features or label.
"""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord

from stamen.client.fedavg import FedAvgClient
from stamen.client.job import LocalJob
from stamen.client.weights import weights_record
from stamen.contract import protocol as p
from stamen.models import NodeClassifier
from stamen.models.label_moments import fedgta_statistics


class FedGTAClient(FedAvgClient):
    """FedAvg's training; the reply adds the FedGTA statistics of the trained model."""

    def reply_records(  # type: ignore[override]
        self, model: NodeClassifier, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        config, data = job.config, job.data
        model.eval()
        with torch.no_grad():
            logits = model(data.x, data.edge_index)
        moments, confidence = fedgta_statistics(
            logits, data.edge_index, data.y, data.train_mask,
            config.fedgta_prop_steps, config.fedgta_lp_alpha, config.fedgta_temperature, config.fedgta_moments,
        )  # fmt: skip
        upload = {p.LABEL_MOMENTS: moments.cpu(), p.SMOOTHING_CONFIDENCE: torch.tensor([confidence])}
        return {p.ARRAYS: weights_record(model.state_dict()), p.FEDGTA_UPLOAD: ArrayRecord(upload)}


PART = FedGTAClient()
