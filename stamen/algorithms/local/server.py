"""Local-only baseline: the server only schedules rounds and collects metrics.

Nothing is aggregated; there is no global model, so the run reports the clients'
own models (client-weighted validation and test accuracy).
"""

from __future__ import annotations

from flwr.serverapp.strategy import Strategy

from stamen.contract.run_config import RunConfig
from stamen.server.strategy_options import weighted_average


def make_strategy(config: RunConfig) -> Strategy:
    return weighted_average(config)  # used for client sampling only
