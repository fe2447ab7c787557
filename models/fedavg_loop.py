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


def fedavg_rounds(
    model: NodeClassifier,
    clients: list[Data],
    rounds: int,
    local_epochs: int,
    lr: float,
    weight_decay: float,
    on_round: Callable[[int, NodeClassifier], None] | None = None,
) -> NodeClassifier:
    """Run ``rounds`` FedAvg rounds from ``model``'s weights; return ``model`` (updated in place).

    Every client keeps its own Adam moments across rounds (as the Flower clients do
    with ``keep-optimizer-state``); the average is weighted by training-node counts.
    ``on_round(r, model)`` is called after each round's aggregation.
    """
    weights = [int(c.train_mask.sum()) for c in clients]
    total = sum(weights)
    if total == 0:
        raise ValueError("no training nodes are left to train on")
    local = [copy.deepcopy(model) for _ in clients]
    optimizers = [torch.optim.Adam(m.parameters(), lr=lr, weight_decay=weight_decay) for m in local]
    for server_round in range(1, rounds + 1):
        states = []
        for local_model, optimizer, data, weight in zip(local, optimizers, clients, weights):
            local_model.load_state_dict(model.state_dict())
            if weight:
                fit(local_model, data, local_epochs, optimizer)
            states.append(local_model.state_dict())
        model.load_state_dict({key: sum(s[key] * w for s, w in zip(states, weights)) / total for key in states[0]})
        if on_round is not None:
            on_round(server_round, model)
    model.eval()
    return model
