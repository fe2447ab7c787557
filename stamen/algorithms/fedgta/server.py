r"""FedGTA server: topology-aware personalised averaging over clients with similar label moments.

Li, Wu, Zhang, Zhu, Li and Wang, *FedGTA: Topology-aware Averaging for Federated Graph
Learning*, PVLDB 17(1), 2024. Each client uploads with its weights the mixed moments
:math:`\mathbf{m}_j` of its label propagation and its local smoothing confidence
:math:`c_j \ge 0` (:mod:`stamen.algorithms.fedgta.label_moments`). For client :math:`i` the server keeps the
clients whose moments are close to its own,

.. math::
    A_i = \{\, j : \cos(\mathbf{m}_i, \mathbf{m}_j) > \gamma \,\} \ni i, \qquad
    W_{ij} = \frac{c_j\, \mathbb{1}[j \in A_i]}{\sum_{k \in A_i} c_k}, \qquad
    \bar{\boldsymbol{\theta}}_i = \sum_j W_{ij} \boldsymbol{\theta}_j,

with :math:`\gamma` = ``fedgta-accept`` (0.5 in the reference implementation): a
confidence-weighted average over the topologically similar clients, sent to client
:math:`i` only (:mod:`stamen.server.personalised`). If every confidence in :math:`A_i` is
zero, the clients of :math:`A_i` count equally.
"""

from __future__ import annotations

import numpy as np
from flwr.app import RecordDict
from flwr.serverapp.strategy import Strategy

from stamen.algorithms.fedgta import messages as wire
from stamen.contract.run_config import RunConfig
from stamen.server.personalised import PersonalisedAverage
from stamen.server.strategy_options import strategy_options


def topology_weights(moments: np.ndarray, confidences: np.ndarray, accept: float) -> np.ndarray:
    """FedGTA's mixing matrix from the clients' moment vectors (rows) and confidences (module docstring)."""
    m = np.asarray(moments, dtype=np.float64)
    unit = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    accepted = unit @ unit.T > accept
    np.fill_diagonal(accepted, True)  # cos(m_i, m_i) = 1: a client always keeps its own model
    c = np.asarray(confidences, dtype=np.float64)
    weights = accepted * c[np.newaxis, :]
    empty = weights.sum(axis=1) <= 0
    weights[empty] = accepted[empty]
    return weights / weights.sum(axis=1, keepdims=True)


class FedGTA(PersonalisedAverage):
    """Personalised aggregates with FedGTA's topology-aware weights.

    Args:
        accept: the cosine similarity of moments above which a client joins another's aggregate.
        **strategy: Flower FedAvg's arguments.
    """

    def __init__(self, accept: float, **strategy) -> None:
        super().__init__(**strategy)
        self.accept = accept

    def mixing(self, contents: list[RecordDict]) -> np.ndarray:
        uploads = [c[wire.FEDGTA_UPLOAD] for c in contents]
        moments = np.stack([u[wire.LABEL_MOMENTS].numpy().reshape(-1) for u in uploads])
        confidences = np.array([float(u[wire.SMOOTHING_CONFIDENCE].numpy().reshape(-1)[0]) for u in uploads])
        return topology_weights(moments, confidences, self.accept)


def make_strategy(config: RunConfig) -> Strategy:
    return FedGTA(accept=config.option("fedgta-accept"), **strategy_options(config))
