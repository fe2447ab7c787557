"""Local-only baseline: every client trains its own model and ignores the server's.

The client's model lives in its persistent state between rounds; what it sends back
is only reported, never used by another client.
"""

from __future__ import annotations

from flwr.app import ConfigRecord

from stamen.client.job import LocalJob, private_record, private_tensors
from stamen.client.local_step import FedAvgClient
from stamen.models import NodeClassifier

STATE_KEY = "local-model"


class LocalClient(FedAvgClient):
    def train(  # type: ignore[override]
        self, model: NodeClassifier, job: LocalJob, round_config: ConfigRecord
    ) -> float:
        if STATE_KEY in job.state:
            model.load_state_dict(private_tensors(job.state[STATE_KEY]))
        loss = super().train(model, job, round_config)
        job.state[STATE_KEY] = private_record(model.state_dict())
        return loss


PART = LocalClient()
