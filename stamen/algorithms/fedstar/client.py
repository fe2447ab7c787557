r"""FedStar client: the structure encoder is shared and averaged, the feature branch and head stay local.

Tan, Liu, Long, Jiang and Zhang, *Federated Learning on Non-IID Graphs via Structural Knowledge
Sharing*, AAAI 2023 (the model: :mod:`stamen.algorithms.fedstar.model`; the embeddings:
:mod:`stamen.graphs.structural_encoding`).
The client's graphs get their nodes' structural embeddings (``fedstar-rw-length`` random-walk
landing probabilities, ``fedstar-degree-length`` one-hot degree columns) once per process,
appended to the node features (:meth:`FedStarClient.data_view`), so training and every
evaluation read them. Each round the client receives the averaged structure encoder
(:mod:`stamen.server.strategy_options`, weighted by training graphs; round 1 sends nothing and every client
starts from the run's seeded model), puts its own feature branch and head on it (kept in its
state from its last round), trains the whole model for ``local-epochs`` passes of the task's
local step (:func:`stamen.tasks.graph_classification.training.fit_graphs`), keeps the local part and replies with the
structure encoder only, as the authors' server averages the ``_s`` weights alone.

What the run reports, as FedPer's: ``global_*`` is the received model (the averaged structure
encoder with the client's own local part before this round's training); the figures without
``global_`` are the client's model after training (``local-eval``).
"""

from __future__ import annotations

import dataclasses
import functools

import torch
from flwr.app import ArrayRecord, ConfigRecord, RecordDict
from torch_geometric.data import Batch, Data

from stamen.algorithms.fedstar.model import FedStarClassifier, split_state
from stamen.client.job import LocalJob, private_record, private_tensors
from stamen.client.local_step import FedAvgClient
from stamen.client.weights import record_tensors, weights_record
from stamen.contract import protocol as p
from stamen.graphs.structural_encoding import structural_encoding
from stamen.models.state import copy_state

LOCAL_STATE = "fedstar-local"  # state: the client's feature branch and head
_VIEWS: dict[tuple[int, int, int], tuple[Data, Batch]] = {}  # (id(data), rw, degree) -> (data, with embeddings)


class FedStarClient(FedAvgClient):
    """See the module docstring."""

    def data_view(self, job: LocalJob) -> LocalJob:
        c = job.config
        return dataclasses.replace(
            job, data=with_structure(job.data, c.option("fedstar-rw-length"), c.option("fedstar-degree-length"))
        )

    def new_model(self, job: LocalJob) -> FedStarClassifier:  # type: ignore[override]
        c = job.config
        structure = c.option("fedstar-rw-length") + c.option("fedstar-degree-length")
        model, initial = _initial_model(
            c.model, int(job.data.num_features) - structure, structure, int(job.data.num_classes), c.hidden,
            c.num_layers, c.dropout, c.seed_of(c.model_seed), job.device,
        )  # fmt: skip
        copy_state(model, initial)
        model.zero_grad(set_to_none=True)
        return model

    def receive(self, model: FedStarClassifier, job: LocalJob, content: RecordDict) -> None:  # type: ignore[override]
        shared, local = split_state(model)
        if len(content[p.ARRAYS]) > 0:
            received = record_tensors(content[p.ARRAYS])
            if received.keys() != shared.keys():
                raise ValueError(
                    f"fedstar: the server sent {sorted(received)[:3]}..., not the structure encoder "
                    f"{sorted(shared)[:3]}..."
                )
            shared = received
        if LOCAL_STATE in job.state:
            local = private_tensors(job.state[LOCAL_STATE])
        copy_state(model, {**shared, **local})

    def train(self, model: FedStarClassifier, job: LocalJob, round_config: ConfigRecord) -> float:  # type: ignore[override]
        loss = super().train(model, job, round_config)  # type: ignore[arg-type]
        job.state[LOCAL_STATE] = private_record(split_state(model)[1])
        return loss

    def reply_records(  # type: ignore[override]
        self, model: FedStarClassifier, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        return {p.ARRAYS: weights_record(split_state(model)[0])}


def with_structure(data: Data, rw_length: int, degree_length: int) -> Batch:
    """``data`` (a client's batch of graphs) with each node's structural embedding appended to its features,
    computed once per process and kept as long as ``data`` is."""
    key = (id(data), rw_length, degree_length)
    cached = _VIEWS.get(key)
    if cached is None or cached[0] is not data:  # the data object is held: its id stays its own
        if not isinstance(data, Batch):
            raise TypeError("algorithm='fedstar' needs a client's set of graphs (task='graph-classification')")
        view = data.clone()
        structure = structural_encoding(data.edge_index, int(data.num_nodes), rw_length, degree_length)
        view.x = torch.cat((data.x, structure.to(data.x.device)), dim=1)
        if len(_VIEWS) >= 64:  # a long-lived process (sweeps in process) keeps the latest federations only
            _VIEWS.clear()
        cached = _VIEWS[key] = (data, view)
    return cached[1]


@functools.lru_cache(maxsize=8)
def _initial_model(
    name: str, in_dim: int, structure_dim: int, num_classes: int, hidden: int, num_layers: int, dropout: float,
    seed: int, device: torch.device,
) -> tuple[FedStarClassifier, dict[str, torch.Tensor]]:  # fmt: skip
    torch.manual_seed(seed)
    model = FedStarClassifier(name, in_dim, structure_dim, num_classes, hidden, num_layers, dropout).to(device)
    return model, {key: value.detach().clone() for key, value in model.state_dict().items()}


PART = FedStarClient()
