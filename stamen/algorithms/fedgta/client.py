"""FedGTA client: FedAvg's local training, then label-propagation moments and smoothing confidence.

Li et al., VLDB 2024 (the math: :mod:`stamen.algorithms.fedgta.label_moments`, :mod:`stamen.algorithms.fedgta.server`).
The client trains its received personalised aggregate like FedAvg, then propagates
its model's soft predictions from its training nodes over its graph and uploads, with
the weights, the mixed moments of the propagated labels and its local smoothing
confidence: statistics of predictions, never a node's features or label.
"""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord

from stamen.algorithms.fedgta import messages as wire
from stamen.algorithms.fedgta.label_moments import fedgta_statistics
from stamen.client.job import LocalJob
from stamen.client.local_step import FedAvgClient
from stamen.client.weights import weights_record
from stamen.contract import protocol as p
from stamen.models import NodeClassifier


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
            config.option("fedgta-prop-steps"),
            config.option("fedgta-lp-alpha"),
            config.option("fedgta-temperature"),
            config.option("fedgta-moments"),
        )  # fmt: skip
        upload = {wire.LABEL_MOMENTS: moments.cpu(), wire.SMOOTHING_CONFIDENCE: torch.tensor([confidence])}
        return {p.ARRAYS: weights_record(model.state_dict()), wire.FEDGTA_UPLOAD: ArrayRecord(upload)}


PART = FedGTAClient()
