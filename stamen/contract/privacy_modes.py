"""The differential-privacy modes a run may ask for (the run-config key ``privacy``), by name.

Declared apart from the run config so that the algorithm registry, below it, names the modes an
algorithm admits against the same list (:attr:`stamen.contract.algorithms.AlgorithmSpec.privacy`).
"""

from __future__ import annotations

PRIVACY = {
    "none": "no differential privacy",
    "dp-sgd": "DP-SGD with Opacus's accountant on each client (per-record gradients clipped and noised: a training "
    "node's, or a graph's for graph classification)",
    "client-dp": "client-level DP: Flower's DP strategy wrappers clip and noise each client's update",
}
