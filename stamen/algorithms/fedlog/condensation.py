r"""FedLoG's server-side condensation: global synthetic nodes and per-class generators.

Plain NumPy (the ServerApp never loads PyTorch). With ``K`` clients, ``C`` classes and
``P`` synthetic nodes per class, client ``k`` uploads its head-branch synthetic
features :math:`\mathbf{S}_k \in \mathbb{R}^{C \times P \times F}` and its training-node
counts per class :math:`n_{k,c}`. The class-share weights are

.. math::
    w_{k,c} = \frac{n_{k,c}}{\sum_{k'} n_{k',c}}, \qquad w_{k,c} = \frac{1}{K} \text{ if no client holds } c,

and the global synthetic nodes

.. math::
    \mathbf{X}^g_{c,j} = \sum_k w_{k,c}\, \mathbf{S}_{k,c,\pi_k(j)},

with one random permutation :math:`\pi_k` of the ``P`` slots per client, so that the
average does not always pair the same slots across clients. The per-class neighbour
generators average the clients' generator weights with the same :math:`w_{k,c}`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def class_weights(counts: np.ndarray) -> np.ndarray:
    """``(K, C)`` class-share weights from training-node counts ``(K, C)``; uniform for a class nobody holds."""
    counts = np.asarray(counts, dtype=np.float64)
    totals = counts.sum(axis=0, keepdims=True)
    uniform = np.full_like(counts, 1.0 / counts.shape[0])
    return np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), uniform)


def condense(synthetic: np.ndarray, weights: np.ndarray, permutations: np.ndarray) -> np.ndarray:
    """Global synthetic nodes ``(C, P, F)`` from the clients' ``(K, C, P, F)``, weights ``(K, C)``
    and one permutation of ``range(P)`` per client, ``(K, P)``."""
    num_clients, _, num_proto, _ = synthetic.shape
    if permutations.shape != (num_clients, num_proto):
        raise ValueError(f"need one permutation of {num_proto} slots per client, got shape {permutations.shape}")
    permuted = np.stack([synthetic[k][:, permutations[k], :] for k in range(num_clients)])
    return np.einsum("kc,kcpf->cpf", weights, permuted)


def per_class_average(states: list[Mapping[str, np.ndarray]], weights: np.ndarray) -> dict[str, np.ndarray]:
    """One state dict per class, ``f"{c}.{name}"``: the clients' ``states`` averaged by column ``c`` of ``weights``."""
    averaged = {}
    for c in range(weights.shape[1]):
        for name in states[0]:
            averaged[f"{c}.{name}"] = sum(w * np.asarray(s[name]) for w, s in zip(weights[:, c], states))
    return averaged
