r"""Ditto client: FedAvg's local training of the global model, plus a personal model near it.

Ditto (Li, Hu, Beirami, Smith: *Ditto: Fair and Robust Federated Learning Through
Personalization*, ICML 2021). Each round client :math:`i` receives the global model
:math:`w^t` (FedAvg, :mod:`stamen.server.strategy_options`) and

1. updates its personal model :math:`v_i` (kept in its state; :math:`v_i = w^t` the first
   time) for ``ditto-personal-epochs`` steps on
   :math:`F_i(v_i) + \frac{\lambda}{2}\lVert v_i - w^t\rVert^2`, :math:`\lambda` = ``ditto-lambda``
   (:func:`stamen.models.personal_training.fit_personal`: Adam steps on :math:`F_i`, each followed by
   the exact proximal map of the regulariser; math there);
2. trains :math:`w^t` for ``local-epochs`` steps as FedAvg does and replies with it.

The two updates are independent given :math:`w^t` (as in the paper's Algorithm 1), and
both start from the random state the client's handler is seeded with: the personal update
runs in a fork of it. So the global model is FedAvg's, step for step, and with
:math:`\lambda = 0` and ``ditto-personal-epochs`` = ``local-epochs`` the personal model is the
local-only baseline's.
Each model has its own Adam moments (the global model's as for FedAvg, the personal
model's in the client's state), both kept across rounds with ``keep-optimizer-state``.

What the run reports: ``global_*`` is the global model :math:`w^t` the client received (the
final evaluation: the last global model); ``test_acc``, ``val_acc`` and the settings without
``global_`` are the personal model :math:`v_i` after this round's update. ``train_loss`` is the
personal model's task loss :math:`F_i(v_i)`, as FedAvg's is its model's, and ``train_regulariser`` the
pull :math:`\frac{\lambda}{2}\lVert v_i - w^t\rVert^2`, each a mean over the personal steps' starts
(their sum is the personal objective).
"""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, ConfigRecord, MetricRecord

from stamen.client.job import LocalJob, private_record, private_tensors
from stamen.client.local_step import FedAvgClient
from stamen.client.weights import weights_record
from stamen.contract import protocol as p
from stamen.models import NodeClassifier
from stamen.models.personal_training import fit_personal

PERSONAL = "ditto-personal"  # state: the personal model v_i
PERSONAL_OPTIMIZER = "ditto-personal-optimizer"  # state: its Adam moments
GLOBAL_UPDATE = "ditto-global-update"  # state, within one message: the trained global model to send
REGULARISER = "ditto-regulariser"  # state, within one message: the personal update's mean regulariser


class DittoClient(FedAvgClient):
    def train(  # type: ignore[override]
        self, model: NodeClassifier, job: LocalJob, round_config: ConfigRecord
    ) -> float:
        received = {key: value.detach().clone() for key, value in model.state_dict().items()}
        anchor = [param.detach().clone() for param in model.parameters()]
        if PERSONAL in job.state:
            model.load_state_dict(private_tensors(job.state[PERSONAL]))
        optimizer = job.optimizer(model, PERSONAL_OPTIMIZER)
        devices = [job.device] if job.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):  # the global update below draws as FedAvg's would
            loss, pull = fit_personal(
                model,
                job.data,
                job.config.option("ditto-personal-epochs"),
                optimizer,
                anchor,
                job.config.option("ditto-lambda"),
            )
        job.keep_optimizer(optimizer, PERSONAL_OPTIMIZER)
        job.state[REGULARISER] = MetricRecord({"value": pull})
        personal = {key: value.detach().clone() for key, value in model.state_dict().items()}
        job.state[PERSONAL] = private_record(personal)

        model.load_state_dict(received)
        super().train(model, job, round_config)  # the global model's FedAvg update
        job.state[GLOBAL_UPDATE] = weights_record(model.state_dict())
        model.load_state_dict(personal)  # the model the client evaluates after training: its own
        return loss

    def train_metrics(self, job: LocalJob) -> dict[str, float]:
        pull = job.state[REGULARISER]
        del job.state[REGULARISER]
        return {p.TRAIN_REGULARISER: float(pull["value"])}

    def reply_records(  # type: ignore[override]
        self, model: NodeClassifier, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        if GLOBAL_UPDATE not in job.state:
            raise RuntimeError("ditto: no trained global model to send (train runs before reply_records)")
        update = job.state[GLOBAL_UPDATE]
        del job.state[GLOBAL_UPDATE]
        return {p.ARRAYS: update}


PART = DittoClient()
