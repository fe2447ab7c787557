"""A run whose training diverged stops as failed, naming the round.

With a step size far too large (``lr=1e30``) the weights overflow to infinity and then
NaN within a round or two, and every later round trains, evaluates and writes NaN. The
round loop calls :func:`check_round` after each round's aggregation: when the global
model's weights or the round's training loss are not finite it raises
:class:`DivergedError` with one line naming the round and what to change; the ServerApp
records the run as ``failed`` with that line. One ``np.isfinite(...).all()`` per float
array and round, on a read-only view of the weights' bytes (no copy).
"""

from __future__ import annotations

import math

import numpy as np
from flwr.app import ArrayRecord

from stamen.contract.arrays import array_values

ADVICE = "training diverged: lower lr (or the algorithm's own step size, e.g. fedlog-lr, server-learning-rate)"


class DivergedError(RuntimeError):
    """The global model's weights or the training loss of a round are NaN or infinite: the run cannot go on."""


def non_finite(arrays: ArrayRecord) -> tuple[str, str] | None:
    """``(name, "nan" or "inf")`` of the first float array holding a value that is not finite; None if all are."""
    for name, array in arrays.items():
        values = array_values(array, writable=False)
        if np.issubdtype(values.dtype, np.inexact) and not np.isfinite(values).all():
            return name, "nan" if np.isnan(values).any() else "inf"
    return None


def check_round(server_round: int, train_loss: float | None, arrays: ArrayRecord | None) -> None:
    """Raise :class:`DivergedError` unless the round's global weights (``arrays``; None: the algorithm does not
    aggregate) and its training loss are finite."""
    if arrays is not None and (found := non_finite(arrays)) is not None:
        name, kind = found
        raise DivergedError(
            f"round {server_round}: the global model's weights are not finite ({kind} in {name}); {ADVICE}"
        )
    if train_loss is not None and not math.isfinite(train_loss):
        raise DivergedError(f"round {server_round}: the clients' training loss is not finite ({train_loss}); {ADVICE}")
