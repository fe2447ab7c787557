"""Local-only baseline: every client trains its own model and ignores the server's.

The client's model lives in its persistent state between rounds; what it sends back
is only reported, never used by another client.
"""

from __future__ import annotations

from flwr.app import ArrayRecord, ConfigRecord

from client import fedavg
from client.job import LocalJob
from models import NodeClassifier

USES_GLOBAL_MODEL = False
STATE_KEY = "local-model"


def train(model: NodeClassifier, job: LocalJob, round_config: ConfigRecord) -> float:
    if STATE_KEY in job.state:
        model.load_state_dict(job.state[STATE_KEY].to_torch_state_dict())
    loss = fedavg.train(model, job, round_config)
    job.state[STATE_KEY] = ArrayRecord(model.state_dict())
    return loss
