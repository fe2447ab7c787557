"""FedSage client (local NeighGen): mend the subgraph with generated neighbours, then FedAvg a classifier on it.

Zhang, Yang, Li, Sun and Yiu, NeurIPS 2021 (the math: :mod:`models.fedsage`). The first time a client trains it hides
``fedsage-hidden-portion`` of its nodes, trains its missing-neighbour generator
(NeighGen) on that impaired subgraph for ``fedsage-gen-epochs`` and keeps it in its
state; from then on its classifier (the run's ``model``; the paper's is GraphSAGE,
``model='sage'``) computes on its subgraph mended by the generator, in training and
in every evaluation. Only the classifier's weights travel; the generator never
leaves the client.

This is FedSage with *local* NeighGen: each generator learns from its own subgraph
only, as in the paper's locally trained NeighGen; the registry names the algorithm
``fedsage-local``. FedSage+ (:mod:`client.fedsage_plus`, ``fedsage+``) also trains
each generator on the other clients' subgraphs before the classifier's rounds, then
uses this module's classifier unchanged.
"""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, ConfigRecord, RecordDict

from client.algorithms import ClientAlgorithm
from client.job import LocalJob, private_record, private_tensors
from client.weights import load_weights, weights_record
from contract import protocol as p
from models.fedsage import Impaired, MendedClassifier, NeighGen, train_neighgen
from models.training import fit

GENERATOR = "fedsage-generator"  # state: the client's trained NeighGen


def new_generator(job: LocalJob) -> NeighGen:
    config = job.config
    return NeighGen(job.data.num_features, config.fedsage_gen_hidden, config.fedsage_max_pred).to(job.device)


def generator_seed(job: LocalJob) -> int:
    """The seed of the client's generator: its initial weights, hidden nodes and training draws."""
    return job.config.seed * 1_000_003 + job.partition_id


def impaired_subgraph(job: LocalJob) -> Impaired:
    """The client's impaired subgraph (the same hidden nodes every time: seeded by client)."""
    config = job.config
    return Impaired(
        job.data.x, job.data.edge_index, config.fedsage_hidden_portion, config.fedsage_max_pred,
        torch.Generator().manual_seed(generator_seed(job)),
    )  # fmt: skip


def initial_generator(job: LocalJob) -> NeighGen:
    """The client's untrained generator, seeded by client."""
    torch.manual_seed(generator_seed(job))
    return new_generator(job)


def trained_generator(job: LocalJob) -> NeighGen:
    """The client's NeighGen: from its state, or trained now on its impaired subgraph (seeded by client)."""
    generator = new_generator(job)
    if GENERATOR in job.state:
        generator.load_state_dict(private_tensors(job.state[GENERATOR]))
        return generator.eval()
    generator = initial_generator(job)
    epochs, lr = job.config.fedsage_gen_epochs, job.config.fedsage_gen_lr
    train_neighgen(
        generator, job.data.x, job.data.edge_index, impaired_subgraph(job), epochs, lr, seed=generator_seed(job)
    )
    job.state[GENERATOR] = private_record(generator.state_dict())
    return generator


class FedSageClient(ClientAlgorithm):
    """The run's classifier on the graph mended by the client's own generator."""

    def new_model(self, job: LocalJob) -> MendedClassifier:
        return MendedClassifier(job.model(), trained_generator(job))

    def receive(self, model: MendedClassifier, job: LocalJob, content: RecordDict) -> None:  # type: ignore[override]
        if len(content[p.ARRAYS]) > 0:
            load_weights(model.classifier, content[p.ARRAYS])

    def train(self, model: MendedClassifier, job: LocalJob, round_config: ConfigRecord) -> float:  # type: ignore[override]
        optimizer = job.optimizer(model.classifier)
        loss = fit(model, job.data, job.config.local_epochs, optimizer)
        job.keep_optimizer(optimizer)
        return loss

    def reply_records(  # type: ignore[override]
        self, model: MendedClassifier, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        return {p.ARRAYS: weights_record(model.classifier.state_dict())}


PART = FedSageClient()
