r"""FED-PUB server: personalised aggregates weighted by the similarity of the clients' functions.

Baek, Jeong, Jin, Yoon and Hwang, *Personalized Subgraph Federated Learning*, ICML 2023.
Each client uploads with its weights its model's functional embedding
:math:`\mathbf{e}_j` (its mean output on the seeded random proxy graph,
:mod:`stamen.algorithms.fedpub.masked`). The server compares the clients' functions by cosine similarity
and sends client :math:`i` its own softmax-weighted average,

.. math::
    S_{ij} = \frac{\mathbf{e}_i^\top \mathbf{e}_j}{\lVert \mathbf{e}_i \rVert \lVert \mathbf{e}_j \rVert}, \qquad
    W_{ij} = \frac{\exp(\tau S_{ij})}{\sum_k \exp(\tau S_{ik})}, \qquad
    \bar{\boldsymbol{\theta}}_i = \sum_j W_{ij} \boldsymbol{\theta}_j,

over the round's replies, with :math:`\tau` = ``fedpub-tau`` (the paper's scale, 10).
Clients with similar subgraphs (communities) thus share more. The machinery of
per-client aggregates is :mod:`stamen.server.personalised`. Differences from the paper: the
client computes its functional embedding on the proxy graph, which it draws from the
run's seed exactly as the server would (the server never needs the model's
architecture), and the aggregate is not additionally weighted by training nodes.
"""

from __future__ import annotations

import numpy as np
from flwr.app import RecordDict
from flwr.serverapp.strategy import Strategy

from stamen.algorithms.fedpub import messages as wire
from stamen.contract.run_config import RunConfig
from stamen.server.personalised import PersonalisedAverage
from stamen.server.strategy_options import strategy_options


def similarity_weights(embeddings: np.ndarray, tau: float) -> np.ndarray:
    """``W_ij = softmax_j(tau * cos(e_i, e_j))`` for the rows of ``embeddings`` (module docstring)."""
    e = np.asarray(embeddings, dtype=np.float64)
    unit = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    scores = tau * unit @ unit.T
    scores -= scores.max(axis=1, keepdims=True)  # the same softmax, without overflow
    weights = np.exp(scores)
    return weights / weights.sum(axis=1, keepdims=True)


class FedPub(PersonalisedAverage):
    """Personalised aggregates with FED-PUB's similarity weights.

    Args:
        tau: the softmax's scale on the cosine similarities.
        **strategy: Flower FedAvg's arguments.
    """

    def __init__(self, tau: float, **strategy) -> None:
        super().__init__(**strategy)
        self.tau = tau

    def mixing(self, contents: list[RecordDict]) -> np.ndarray:
        embeddings = np.stack([c[wire.FEDPUB_UPLOAD][wire.FUNCTIONAL_EMBEDDING].numpy().reshape(-1) for c in contents])
        return similarity_weights(embeddings, self.tau)


def make_strategy(config: RunConfig) -> Strategy:
    return FedPub(tau=config.option("fedpub-tau"), **strategy_options(config))
