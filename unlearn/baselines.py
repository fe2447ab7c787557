r"""The yardsticks of unlearning: retraining from scratch, fine-tuning, gradient ascent.

All three run in-process on the clients' subgraphs with the run's hyperparameters,
following the FedAvg loop of :mod:`simulations.baseline` (clients trained one after
another, weights averaged in memory, weighted by training-node counts):

- :func:`fedavg_train`: FedAvg from a fresh model initialised from ``seed`` (the
  original model of a seed is ``fedavg_train(all clients)``).
- ``retrain``: :func:`fedavg_train` over the *remaining* federation (the forgotten nodes
  and their incident edges removed; a forgotten client absent) for the same number of
  rounds, with the same seed and hyperparameters. The gold standard.
- :func:`finetune`: continue FedAvg from the original weights on the remaining
  federation for a fraction of the rounds (catastrophic forgetting as unlearning).
- :func:`gradient_ascent`: the clients holding :math:`D_f` take a few Adam steps that
  *increase* :math:`\mathcal{L}_{CE}` on :math:`D_f` (on the graphs as trained),
  :math:`\theta \leftarrow \theta + \eta\,\nabla_\theta \mathcal{L}_{CE}(D_f)`.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch_geometric.data import Data

from models import NodeClassifier, build_model
from models.fedavg_loop import fedavg_rounds as run_fedavg
from contract.run_config import RunConfig


def new_model(config: RunConfig, in_dim: int, num_classes: int, seed: int) -> NodeClassifier:
    """The run's architecture, initialised from ``seed``."""
    torch.manual_seed(seed)
    return build_model(
        config.model, in_dim, num_classes, hidden=config.hidden, num_layers=config.num_layers, dropout=config.dropout
    )


def fedavg_rounds(
    model: NodeClassifier, clients: list[Data], config: RunConfig, rounds: int, seed: int
) -> NodeClassifier:
    """``rounds`` FedAvg rounds from ``model``'s weights with the run's local training."""
    torch.manual_seed(seed)
    return run_fedavg(model, clients, rounds, config.local_epochs, config.lr, config.weight_decay)


def fedavg_train(clients: list[Data], config: RunConfig, seed: int, rounds: int | None = None) -> NodeClassifier:
    """FedAvg from scratch over ``clients`` (``config.num_server_rounds`` rounds unless given)."""
    model = new_model(config, clients[0].num_features, int(clients[0].num_classes), seed)
    return fedavg_rounds(model, clients, config, rounds or config.num_server_rounds, seed)


def finetune_rounds(training_rounds: int) -> int:
    """Fine-tuning's rounds: a tenth of the training rounds, at least one."""
    return max(1, training_rounds // 10)


def finetune(
    model: NodeClassifier, remaining: list[Data], config: RunConfig, seed: int, rounds: int | None = None
) -> NodeClassifier:
    """Continue FedAvg on the remaining federation (default: :func:`finetune_rounds`)."""
    rounds = rounds or finetune_rounds(config.num_server_rounds)
    return fedavg_rounds(copy.deepcopy(model), remaining, config, rounds, seed)


def gradient_ascent(
    model: NodeClassifier, original: list[Data], lr: float = 0.01, steps: int = 5, seed: int = 0
) -> NodeClassifier:
    """``steps`` Adam steps of ascent on the cross-entropy of :math:`D_f` (``forget_mask``), summed over clients."""
    torch.manual_seed(seed)
    model = copy.deepcopy(model)
    holders = [d for d in original if bool(d.forget_mask.any())]
    count = sum(int(d.forget_mask.sum()) for d in holders)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.eval()  # deterministic steps: no dropout
    for _ in range(steps):
        optimizer.zero_grad()
        loss = (
            sum(
                nn.functional.cross_entropy(
                    model(d.x, d.edge_index)[d.forget_mask], d.y[d.forget_mask], reduction="sum"
                )
                for d in holders
            )
            / count
        )
        (-loss).backward()
        optimizer.step()
    model.eval()
    return model
