"""What one client works with in a round: its subgraph, its run config, its device, its state."""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from flwr.app import Array, ArrayRecord, RecordDict
from torch_geometric.data import Data

from stamen.client.tasks import client_task
from stamen.contract.run_config import RunConfig
from stamen.graphs import FederationSpec, build_federation
from stamen.graphs.node_data import load_partition
from stamen.models import NodeClassifier, build_model
from stamen.models.state import copy_state
from stamen.models.training import adam, adam_state_record, restore_adam_state

OPTIMIZER_STATE = "optimizer-state"


@dataclass
class LocalJob:
    """A client's view of the round.

    Attributes:
        config: the run config.
        partition_id: this client's index among the partitions.
        data: this client's subgraph with split masks, already on ``device``.
        device: where the client trains.
        state: the client's persistent state across rounds (Flower's ``context.state``).
        new_client: the held-out subgraph of the new-client setting (``new-client=true``), which
            every client evaluates its models on; None without one.
        spec: the federation the client belongs to (a task that evaluates beyond the client's subgraph,
            link prediction's cut edges, reads it); None where a harness gives none.
    """

    config: RunConfig
    partition_id: int
    data: Data
    device: torch.device
    state: RecordDict
    new_client: Data | None = None
    spec: FederationSpec | None = None

    def model(self) -> NodeClassifier:
        """This process's model for the run, reset to the initial weights of the run's seed.

        Every client starts from the same seeded weights. Building a PyG model (signature
        inspection, random initialisation) costs about as much as a local epoch on a Cora
        client, so a process builds each architecture once and resets it on every call:
        the same object comes back each time, to be used within one message (Flower hands
        a process one message at a time). :meth:`new_model` gives a separate one.
        """
        model, initial = self._built()
        return _reset(model, initial)

    def new_model(self) -> NodeClassifier:
        """A model object of its own (unlike :meth:`model`'s), with the run's initial weights."""
        model, initial = self._built()
        return _reset(copy.deepcopy(model), initial)

    def _built(self) -> tuple[NodeClassifier, dict[str, torch.Tensor]]:
        task = client_task(self.config.task)
        if task is not None:  # the task's own model (stamen/client/tasks.py)
            return task.initial_model(self)  # type: ignore[return-value]
        return _initial_model(
            self.config.model,
            self.data.num_features,
            int(self.data.num_classes),
            self.config.hidden,
            self.config.num_layers,
            self.config.dropout,
            self.config.seed_of(self.config.model_seed),
            self.device,
        )

    def optimizer(self, model: torch.nn.Module, key: str = OPTIMIZER_STATE) -> torch.optim.Adam:
        """Adam over ``model``, resuming this client's moment estimates kept under ``key`` in earlier rounds.

        Keeping the optimizer's state across rounds (as in-process FGL loops do) makes
        one local epoch per round a real Adam step rather than a fresh first step.
        """
        optimizer = adam(model.parameters(), self.config.lr, self.config.weight_decay)
        if self.config.keep_optimizer_state:
            self.resume(optimizer, key)
        return optimizer

    def resume(self, optimizer: torch.optim.Adam, key: str, params: Sequence[torch.Tensor] | None = None) -> None:
        """Set ``optimizer``'s moment estimates (for ``params`` only: this client's among several clients')
        from this client's state under ``key``, if it has some."""
        if key in self.state:
            saved = private_tensors(self.state[key])
            restore_adam_state(optimizer, {k: v.to(self.device) for k, v in saved.items()}, params)

    def keep_optimizer(
        self, optimizer: torch.optim.Adam, key: str = OPTIMIZER_STATE, params: Sequence[torch.Tensor] | None = None
    ) -> None:
        """Keep ``optimizer``'s moment estimates (of ``params`` only, if given) under ``key`` for the next
        round (``keep-optimizer-state``)."""
        if self.config.keep_optimizer_state:
            self.state[key] = private_record(adam_state_record(optimizer, params))


RAW = "stamen.raw"  # an Array's serialisation type for a client's private state: C-order bytes, no header


def private_record(tensors: dict[str, torch.Tensor]) -> ArrayRecord:
    """Tensors a client keeps for itself (its state across rounds), packed as raw bytes.

    State stays with its client (Flower carries ``context.state`` between the processes
    that serve the client, never to the server), so it needs no portable format: raw
    C-order bytes with the dtype and shape beside them cost a copy, where Flower's
    ``.npy`` serialisation writes and parses a header per array, a tenth of a
    millisecond each, several times per client and round.
    """
    record = ArrayRecord()
    for name, tensor in tensors.items():
        array = tensor.detach().cpu().contiguous().numpy()
        record[name] = Array(dtype=str(array.dtype), shape=tuple(array.shape), stype=RAW, data=array.tobytes())
    return record


def private_tensors(record: ArrayRecord) -> dict[str, torch.Tensor]:
    """Inverse of :func:`private_record` (an array of another serialisation type is read by Flower)."""
    tensors = {}
    for name, array in record.items():
        if array.stype != RAW:
            tensors[name] = torch.from_numpy(array.numpy())
            continue
        values = np.frombuffer(array.data, dtype=np.dtype(array.dtype))
        if values.size != math.prod(array.shape):
            raise ValueError(f"client state {name!r}: {values.size} values for shape {array.shape}")
        tensors[name] = torch.from_numpy(values.reshape(array.shape).copy())
    return tensors


@functools.lru_cache(maxsize=64)
def client_data(spec: FederationSpec, partition_id: int, device: torch.device) -> Data:
    """Client ``partition_id``'s subgraph on ``device``, built once per process.

    A data root holding an exported partition (a deployment's host) is read alone;
    otherwise the graph is loaded and cut here.
    """
    if not 0 <= partition_id < spec.num_clients:
        raise ValueError(f"partition-id {partition_id} is outside 0..{spec.num_clients - 1}")
    exported = load_partition(spec, partition_id)
    if exported is not None:
        return exported.to(device)
    return build_federation(spec).clients[partition_id].to(device)


@functools.lru_cache(maxsize=8)
def _initial_model(
    name: str,
    in_dim: int,
    num_classes: int,
    hidden: int,
    num_layers: int,
    dropout: float,
    seed: int,
    device: torch.device,
) -> tuple[NodeClassifier, dict[str, torch.Tensor]]:
    torch.manual_seed(seed)
    model = build_model(name, in_dim, num_classes, hidden=hidden, num_layers=num_layers, dropout=dropout)
    model = model.to(device)
    return model, {key: value.detach().clone() for key, value in model.state_dict().items()}


def _reset(model: NodeClassifier, initial: dict[str, torch.Tensor]) -> NodeClassifier:
    copy_state(model, initial)
    model.zero_grad(set_to_none=True)
    return model


def new_client_data(spec: FederationSpec, device: torch.device) -> Data | None:
    """The new client's subgraph on ``device`` (None unless ``new-client``), built once per process."""
    federation = build_federation(spec)
    return None if federation.new_client is None else federation.new_client.to(device)
