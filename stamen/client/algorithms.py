"""The client part of every FL algorithm: its contract and the loader by run-config name.

An algorithm's client module (named by its spec in :mod:`stamen.contract.algorithms`) sets
``PART`` to an instance of a :class:`ClientAlgorithm` subclass (a spec ``module:NAME``
names another attribute, when one module holds the parts of several variants). The subclass implements
:meth:`ClientAlgorithm.train`; an algorithm whose model or messages differ from a plain
weight exchange overrides the hooks, whose defaults are FedAvg's:

- :meth:`~ClientAlgorithm.data_view`: the job with the data the algorithm's model reads
  (default: the client's own; FedStar's adds the nodes' structural embeddings), for
  training and every evaluation of the message;
- :meth:`~ClientAlgorithm.new_model`: the model (default: the run's seeded model);
- :meth:`~ClientAlgorithm.receive`: install what the server sent (default: load the
  ``arrays`` record when it is not empty; round 1 sends none, as every client builds
  the same seeded model);
- :meth:`~ClientAlgorithm.train_metrics`: figures of the training besides its loss, e.g. a regulariser
  (default: none);
- :meth:`~ClientAlgorithm.reply_records`: the array records of the training reply
  (default: ``{"arrays": the model's weights}``);
- :meth:`~ClientAlgorithm.query`: the reply to a query message of a kind the ClientApp
  does not answer itself, e.g. an algorithm's own phase before its rounds (default:
  None, the kind is unknown).

Whether the client evaluates the model it receives (the algorithm keeps a global
model) is the spec's ``aggregates``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, RecordDict

from stamen.client.job import LocalJob
from stamen.client.weights import load_weights, weights_record
from stamen.contract import protocol as p
from stamen.contract.algorithms import AlgorithmSpec, algorithm_spec, import_part

Train = TypeVar("Train", bound=Callable[..., Any])


def local_step(train: Train) -> Train:
    """Mark a :meth:`ClientAlgorithm.train` as FedAvg's local step on the graph its model computes on (Adam over
    ``local-epochs`` full-batch steps from the received weights, a proximal term of ``proximal_mu`` included):
    the in-process engine may then train a round's clients together (:mod:`stamen.client.together`)."""
    train.local_step = True  # type: ignore[attr-defined]
    return train


def takes_local_step(part: ClientAlgorithm) -> bool:
    """Whether ``part``'s ``train`` is one :func:`local_step` marked (inherited or its own)."""
    return getattr(type(part).train, "local_step", False) is True


class ClientAlgorithm:
    """The client part of an FL algorithm (see the module docstring)."""

    def data_view(self, job: LocalJob) -> LocalJob:
        return job

    def new_model(self, job: LocalJob) -> torch.nn.Module:
        return job.model()

    def receive(self, model: torch.nn.Module, job: LocalJob, content: RecordDict) -> None:
        if len(content[p.ARRAYS]) > 0:
            load_weights(model, content[p.ARRAYS])

    def train(self, model: torch.nn.Module, job: LocalJob, round_config: ConfigRecord) -> float:
        """Train ``model`` locally for the round; return the mean training loss."""
        raise NotImplementedError

    def train_metrics(self, job: LocalJob) -> dict[str, float]:
        """Figures of the round's training besides its loss (Ditto's regulariser), for the reply's metrics; read
        once, right after :meth:`train` (default: none)."""
        return {}

    def reply_records(self, model: torch.nn.Module, job: LocalJob, server_round: int) -> dict[str, ArrayRecord]:
        return {p.ARRAYS: weights_record(model.state_dict())}

    def query(self, job: LocalJob, message: Message) -> Message | None:
        """The reply to an algorithm-specific query (``config["query"]`` names the kind); None: not one of ours."""
        return None


def client_algorithm(name: str) -> tuple[AlgorithmSpec, ClientAlgorithm]:
    """The spec of ``name`` and its client part (ValueError in one line if unknown)."""
    spec = algorithm_spec(name)
    module, _, attribute = spec.client.partition(":")
    attribute = attribute or "PART"
    part = getattr(import_part(module, spec.client, "client", name), attribute, None)
    if not isinstance(part, ClientAlgorithm):
        raise ValueError(f"{spec.client} (the client part of {name!r}) sets no {attribute} = a ClientAlgorithm")
    return spec, part
