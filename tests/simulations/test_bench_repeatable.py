"""The privacy bench is repeatable: each of its runs seeds the server's draws as every run does.

The client-level DP noise comes from NumPy's global generator and the client sampling from
Python's ``random``; a bench that did not seed them reported figures that depended on what
the process had drawn before (the privacy bench's client-DP figures).
"""

import random

import numpy as np

from stamen.benches.privacy import federated_run
from stamen.contract.run_config import RunConfig

SMALL = {"csbm-nodes": 300, "num-server-rounds": 3, "local-epochs": 1, "min-clients": 2, "seed": 4}


def _after_other_draws(draws: int, run):
    """``run()`` after the process's global generators were moved ``draws`` steps on."""
    np.random.seed(draws)
    random.seed(draws)
    np.random.random(draws)
    return run()


def test_the_privacy_benchs_client_dp_run_repeats_whatever_was_drawn_before():
    config = RunConfig.from_flower({**SMALL, "privacy": "client-dp", "noise-multiplier": 1.0, "clipping-norm": 0.5})
    first = _after_other_draws(1, lambda: federated_run(config, 3))
    second = _after_other_draws(7, lambda: federated_run(config, 3))
    assert first == second
