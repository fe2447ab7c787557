"""FED-PUB client: weights under personal sparse masks, and the model's functional embedding for the server.

Baek et al., ICML 2023 (the math: :mod:`stamen.algorithms.fedpub.masked`, :mod:`stamen.algorithms.fedpub.server`). The
client receives its personalised aggregate, trains weights and its masks with
FED-PUB's loss (cross-entropy, ``fedpub-l1`` on the masks, ``fedpub-loc-l2`` on the
weights' distance from the aggregate; both 0 by default, as the authors' code runs,
:mod:`stamen.algorithms.fedpub.masked`), keeps the masks in its state and replies with
the weights and its functional embedding on the proxy graph drawn from the run's
seed. Every evaluation uses the client's masks, so the "global" figures of a round
are those of each client's personalised aggregate under its own masks.

As the authors' code, Adam's moments (over weights and masks) carry over from round to
round under ``keep-optimizer-state``. Differences from it: docs/algorithms.md.
"""

from __future__ import annotations

import functools

import torch
from flwr.app import ArrayRecord, ConfigRecord, RecordDict

from stamen.algorithms.fedpub import messages as wire
from stamen.algorithms.fedpub.masked import MaskedClassifier, fit_masked, functional_embedding, proxy_graph
from stamen.client.algorithms import ClientAlgorithm
from stamen.client.job import LocalJob, private_record, private_tensors
from stamen.client.weights import load_weights, weights_record
from stamen.contract import protocol as p
from stamen.models.training import adam

MASKS = "fedpub-masks"  # state: the client's personal masks
OPTIMIZER = "fedpub-adam"  # state: Adam's moments over the weights and the masks


@functools.lru_cache(maxsize=4)
def _proxy(nodes: int, num_features: int, seed: int, graphs: int) -> tuple[torch.Tensor, torch.Tensor]:
    return proxy_graph(nodes, num_features, seed, graphs)


class FedPubClient(ClientAlgorithm):
    """The run's model under the client's masks; uploads its functional embedding."""

    def new_model(self, job: LocalJob) -> MaskedClassifier:
        model = MaskedClassifier(job.model(), prune_below=job.config.option("fedpub-prune")).to(job.device)
        if MASKS in job.state:
            model.masks.load_state_dict(private_tensors(job.state[MASKS]))
        return model

    def receive(self, model: MaskedClassifier, job: LocalJob, content: RecordDict) -> None:  # type: ignore[override]
        if len(content[p.ARRAYS]) > 0:
            load_weights(model.base, content[p.ARRAYS])

    def train(self, model: MaskedClassifier, job: LocalJob, round_config: ConfigRecord) -> float:  # type: ignore[override]
        config = job.config
        optimizer = adam(model.base.parameters(), config.lr, config.weight_decay)
        optimizer.add_param_group({"params": list(model.masks.parameters()), "weight_decay": 0.0})
        if config.keep_optimizer_state:
            job.resume(optimizer, OPTIMIZER)
        loss = fit_masked(
            model, job.data, config.local_epochs, optimizer, config.option("fedpub-l1"), config.option("fedpub-loc-l2")
        )
        job.keep_optimizer(optimizer, OPTIMIZER)
        job.state[MASKS] = private_record(model.masks.state_dict())
        return loss

    def reply_records(  # type: ignore[override]
        self, model: MaskedClassifier, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        config = job.config
        proxy = _proxy(
            config.option("fedpub-proxy-nodes"),
            int(job.data.num_features),
            config.seed,
            config.option("fedpub-proxy-graphs"),
        )
        embedding = functional_embedding(model, proxy)
        return {
            p.ARRAYS: weights_record(model.base.state_dict()),
            wire.FEDPUB_UPLOAD: ArrayRecord({wire.FUNCTIONAL_EMBEDDING: embedding.cpu()}),
        }


PART = FedPubClient()
