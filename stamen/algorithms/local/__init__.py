"""Local-only training: no aggregation, each client trains alone (the baseline of personalised FL)."""

from stamen.contract.algorithms import AlgorithmSpec

SPEC = AlgorithmSpec(
    "local",
    "no aggregation, each client trains alone",
    "stamen.algorithms.local.server",
    "stamen.algorithms.local.client",
    aggregates=False,
    privacy=("none", "dp-sgd"),
    any_task=True,
)
