r"""FedPer client: the encoder is shared and averaged, the head stays on the client.

FedPer (Arivazhagan, Aggarwal, Singh, Choudhary: *Federated Learning with Personalization
Layers*, arXiv:1912.00818, 2019) splits the model into base layers, averaged by the server
as in FedAvg, and personalisation layers that never leave the client. Here the base is the
model's encoder :math:`\phi` and the personal layer its linear head :math:`h_i`
(:mod:`stamen.models.node_classifier`). Each round client :math:`i` receives the averaged encoder
:math:`\bar\phi^t = \sum_k n_k \phi_k^t / \sum_k n_k` (:mod:`stamen.algorithms.fedper.server`), puts its own
head on it, trains both for ``local-epochs`` steps on its cross-entropy and replies with the
encoder only; its head is kept in its state (``context.state``) for the next round.

What the run reports: ``global_*`` is the received model, i.e. the averaged encoder with the
client's own head before this round's training (the final evaluation: the last averaged
encoder with each client's last head); ``test_acc``, ``val_acc`` and the settings without
``global_`` are the personalised model after local training. Before a client's first training
its head is the run's seeded initial head.
"""

from __future__ import annotations

from flwr.app import ArrayRecord, ConfigRecord, RecordDict

from stamen.client.job import LocalJob, private_record, private_tensors
from stamen.client.local_step import FedAvgClient
from stamen.client.weights import record_tensors, weights_record
from stamen.contract import protocol as p
from stamen.models import NodeClassifier
from stamen.models.personal_training import ENCODER, HEAD, load_part, part_state

HEAD_STATE = "personal-head"  # state: the client's own head (FedPer, FedRep)


class SharedEncoderClient(FedAvgClient):
    """Receives the averaged encoder, keeps its own head, replies with the encoder (FedPer's and FedRep's hooks)."""

    def receive(self, model: NodeClassifier, job: LocalJob, content: RecordDict) -> None:  # type: ignore[override]
        if len(content[p.ARRAYS]) > 0:
            load_part(model, record_tensors(content[p.ARRAYS]), ENCODER)
        if HEAD_STATE in job.state:
            load_part(model, private_tensors(job.state[HEAD_STATE]), HEAD)

    def keep_head(self, model: NodeClassifier, job: LocalJob) -> None:
        job.state[HEAD_STATE] = private_record(part_state(model, HEAD))

    def reply_records(  # type: ignore[override]
        self, model: NodeClassifier, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        return {p.ARRAYS: weights_record(part_state(model, ENCODER))}


class FedPerClient(SharedEncoderClient):
    """FedAvg's local epochs on the whole model; the head is kept, the encoder sent."""

    def train(  # type: ignore[override]
        self, model: NodeClassifier, job: LocalJob, round_config: ConfigRecord
    ) -> float:
        loss = super().train(model, job, round_config)
        self.keep_head(model, job)
        return loss


PART = FedPerClient()
