r"""FedRep client: the local head is fitted first on the received encoder, then the encoder.

FedRep (Collins, Hassani, Mokhtari, Shakkottai: *Exploiting Shared Representations for
Personalized Federated Learning*, ICML 2021) learns one representation for all clients and
a head per client. Each round client :math:`i` receives the averaged encoder :math:`\phi^t`
(:mod:`stamen.algorithms.fedper.server`), then

1. trains its head :math:`h_i` for ``rep-head-epochs`` full-batch steps with the encoder
   frozen;
2. trains the encoder for ``local-epochs`` steps with the new head frozen;

and replies with the encoder only (:func:`stamen.models.personal_training.fit_part`, math there). The
head stays in the client's state for the next round. One Adam serves both phases (its
moments kept across rounds as for every client, ``keep-optimizer-state``); a frozen part
gets no gradient, so Adam leaves it untouched. ``train-loss`` is the encoder phase's mean.

What the run reports is as for FedPer (:mod:`stamen.algorithms.fedper.client`): ``global_*`` is the averaged
encoder with the client's head before the round's training, the figures without
``global_`` the personalised model after both phases.
"""

from __future__ import annotations

from flwr.app import ConfigRecord

from stamen.algorithms.fedper.client import SharedEncoderClient
from stamen.client.job import LocalJob
from stamen.models import NodeClassifier
from stamen.models.personal_training import fit_part


class FedRepClient(SharedEncoderClient):
    def train(  # type: ignore[override]
        self, model: NodeClassifier, job: LocalJob, round_config: ConfigRecord
    ) -> float:
        optimizer = job.optimizer(model)
        fit_part(model, job.data, job.config.option("rep-head-epochs"), optimizer, model.head)
        loss = fit_part(model, job.data, job.config.local_epochs, optimizer, model.encoder)
        job.keep_optimizer(optimizer)
        self.keep_head(model, job)
        return loss


PART = FedRepClient()
