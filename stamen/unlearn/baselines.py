r"""The yardsticks' math: fine-tuning's budget and gradient ascent on the forgotten nodes.

Retraining from scratch and fine-tuning are federated training (the app's round loop on
the remaining federation, :mod:`stamen.server.unlearning`); what is theirs alone lives here:

- :func:`finetune_rounds`: fine-tuning continues FedAvg from the original weights on the
  remaining federation for a tenth of the training rounds (catastrophic forgetting as
  unlearning).
- :func:`gradient_ascent`: a client holding :math:`D_f` takes a few Adam steps that
  *increase* :math:`\mathcal{L}_{CE}` on its :math:`D_f` (on its graph as trained),
  :math:`\theta \leftarrow \theta + \eta\,\nabla_\theta \mathcal{L}_{CE}(D_f)`; the server
  averages the holders' models weighted by their forgotten nodes.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch_geometric.data import Data

from stamen.models import NodeClassifier

ASCENT_STEPS = 5  # gradient ascent's budget: Adam steps per holder


def finetune_rounds(training_rounds: int) -> int:
    """Fine-tuning's rounds: a tenth of the training rounds, at least one."""
    return max(1, training_rounds // 10)


def gradient_ascent(
    model: NodeClassifier, graphs: list[Data], lr: float = 0.01, steps: int = ASCENT_STEPS, seed: int = 0
) -> NodeClassifier:
    """A copy of ``model`` after ``steps`` Adam steps of ascent on the mean cross-entropy of :math:`D_f`
    (``forget_mask`` of ``graphs``, summed over graphs); unchanged where no graph holds a forgotten node."""
    torch.manual_seed(seed)
    model = copy.deepcopy(model)
    model.eval()  # deterministic steps: no dropout
    holders = [d for d in graphs if bool(d.forget_mask.any())]
    count = sum(int(d.forget_mask.sum()) for d in holders)
    if count == 0:
        return model
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
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
