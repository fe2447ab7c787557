"""FedAvg in one process: clients trained one after another, weights averaged in memory.

This is what in-process FGL libraries run. Stamen uses it as the yardstick of its
Flower runs (``stamen bench sim``) and as the retraining baseline of unlearning; the
Flower app itself trains the same way, one client per process.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from torch_geometric.data import Data

from models.node_classifier import NodeClassifier
from models.training import fit

State = dict[str, torch.Tensor]


def weighted_average(states: list[State], weights: list[int]) -> State:
    """:math:`\\sum_i n_i \\theta_i / \\sum_i n_i`: FedAvg's aggregate."""
    total = sum(weights)
    if not states or total <= 0:
        raise ValueError("nothing to average: no client state with a positive weight")
    return {key: sum(s[key] * w for s, w in zip(states, weights)) / total for key in states[0]}


class LocalClients:
    """The clients of an in-process federation, each with its own model copy and Adam moments.

    Every client keeps its Adam moments across rounds (as the Flower clients do with
    ``keep-optimizer-state``); :meth:`average` weights by training-node counts.
    """

    def __init__(
        self, model: NodeClassifier, clients: list[Data], local_epochs: int, lr: float, weight_decay: float
    ) -> None:
        self.clients = clients
        self.local_epochs = local_epochs
        self.weights = [int(c.train_mask.sum()) for c in clients]
        if sum(self.weights) == 0:
            raise ValueError("no training nodes are left to train on")
        self.models = [copy.deepcopy(model) for _ in clients]
        self.optimizers = [torch.optim.Adam(m.parameters(), lr=lr, weight_decay=weight_decay) for m in self.models]

    def train(self, state: State) -> list[State]:
        """Every client trains ``local_epochs`` from ``state``; their states (valid until the next call)."""
        states = []
        for local_model, optimizer, data, weight in zip(self.models, self.optimizers, self.clients, self.weights):
            local_model.load_state_dict(state)
            if weight:
                fit(local_model, data, self.local_epochs, optimizer)
            states.append(local_model.state_dict())
        return states

    def average(self, states: list[State]) -> State:
        """The FedAvg of ``states``, weighted by training-node counts."""
        return weighted_average(states, self.weights)


def fedavg_rounds(
    model: NodeClassifier,
    clients: list[Data],
    rounds: int,
    local_epochs: int,
    lr: float,
    weight_decay: float,
    on_round: Callable[[int, NodeClassifier], None] | None = None,
    on_client_states: Callable[[int, State, list[State]], None] | None = None,
) -> NodeClassifier:
    """Run ``rounds`` FedAvg rounds from ``model``'s weights; return ``model`` (updated in place).

    ``on_client_states(r, start, states)`` sees each round's global weights and the
    clients' weights after local training, before they are averaged (the tensors change
    afterwards: a hook that keeps them copies them);
    ``on_round(r, model)`` is called after each round's aggregation.
    """
    local = LocalClients(model, clients, local_epochs, lr, weight_decay)
    for server_round in range(1, rounds + 1):
        start = model.state_dict()
        states = local.train(start)
        if on_client_states is not None:
            on_client_states(server_round, start, states)
        model.load_state_dict(local.average(states))
        if on_round is not None:
            on_round(server_round, model)
    model.eval()
    return model
