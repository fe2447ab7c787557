r"""FedProto client: trains its own model towards the global class prototypes and shares its prototypes.

FedProto (Tan, Long, Liu, Zhou, Lu, Jiang, Zhang: *FedProto: Federated Prototype Learning
across Heterogeneous Clients*, AAAI 2022; math in :mod:`stamen.algorithms.fedproto.prototypes`). No weights travel:
the client keeps its whole model (encoder and head) in its state (``context.state``); the
server sends the global prototypes :math:`\bar C^{(j)}` with their class counts
(:data:`stamen.contract.protocol.FEDPROTO_GLOBAL`, from the second round on and with the final
evaluation). Each round the client trains ``local-epochs`` steps on
:math:`\mathrm{CE} + \lambda \cdot \operatorname{mean}\tfrac{1}{d}\lVert f(x) - \bar C^{(y)}\rVert^2`
(:math:`\lambda` = ``fedproto-lambda``), then replies with an empty ``arrays`` record and its own
prototypes and training-node counts per class (:data:`stamen.contract.protocol.FEDPROTO_UPLOAD`): class
means of embeddings, never a node's features or label. A class without training nodes on
the client has a zero prototype and count 0, so the server ignores it.

Prediction (the paper's inference rule): the nearest global prototype in embedding space,
among the classes that have one (:class:`stamen.algorithms.fedproto.prototypes.PrototypeClassifier`); before the
client has received any global prototypes, its local head.

What the run reports: ``global_*`` is the client's model (as trained up to the previous round)
with the global prototypes it just received, before this round's training (the final
evaluation: each client's last model with the last global prototypes); ``test_acc``,
``val_acc`` and the settings without ``global_`` are its model after this round's training,
still predicting with the prototypes it received this round.
"""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, ConfigRecord, RecordDict

from stamen.algorithms.fedproto import messages as wire
from stamen.algorithms.fedproto.prototypes import PrototypeClassifier, class_prototypes, fit_prototypes
from stamen.client.algorithms import ClientAlgorithm
from stamen.client.job import LocalJob, private_record, private_tensors
from stamen.contract import protocol as p

PERSONAL = "fedproto-personal"  # state: the client's model (encoder and head)


class FedProtoClient(ClientAlgorithm):
    def new_model(self, job: LocalJob) -> PrototypeClassifier:
        return PrototypeClassifier(job.model(), int(job.data.num_classes))

    def receive(self, model: PrototypeClassifier, job: LocalJob, content: RecordDict) -> None:  # type: ignore[override]
        if PERSONAL in job.state:
            model.model.load_state_dict(private_tensors(job.state[PERSONAL]))
        if wire.FEDPROTO_GLOBAL in content:
            record = content[wire.FEDPROTO_GLOBAL]
            if wire.PROTOTYPES not in record or wire.PROTOTYPE_COUNTS not in record:
                raise ValueError(
                    f"the {wire.FEDPROTO_GLOBAL!r} record lacks {wire.PROTOTYPES!r} or {wire.PROTOTYPE_COUNTS!r}"
                )
            model.set_prototypes(
                torch.from_numpy(record[wire.PROTOTYPES].numpy()).to(job.device),
                torch.from_numpy(record[wire.PROTOTYPE_COUNTS].numpy()).to(job.device),
            )

    def train(  # type: ignore[override]
        self, model: PrototypeClassifier, job: LocalJob, round_config: ConfigRecord
    ) -> float:
        optimizer = job.optimizer(model.model)
        loss = fit_prototypes(
            model.model,
            job.data,
            job.config.local_epochs,
            optimizer,
            model.prototypes,
            model.known,
            job.config.option("fedproto-lambda"),
        )
        job.keep_optimizer(optimizer)
        job.state[PERSONAL] = private_record(model.model.state_dict())
        return loss

    def reply_records(  # type: ignore[override]
        self, model: PrototypeClassifier, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        prototypes, counts = class_prototypes(model.model, job.data)
        upload = ArrayRecord({wire.PROTOTYPES: prototypes, wire.PROTOTYPE_COUNTS: counts})
        return {p.ARRAYS: ArrayRecord(), wire.FEDPROTO_UPLOAD: upload}


PART = FedProtoClient()
