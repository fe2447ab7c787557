r"""Which round a FedLoG bench run reports: Stamen's selection and FedLoG's authors', from the same rows.

A run's rows hold, every round, the clients' models' figures (each client's model after
its local training) pooled over clients, and each client's own validation accuracy and
node counts (``per_client``). The reported figures are those of one round, picked on
validation only; the two rules differ only in which round that is, so one run gives both
(no second run, no run-config key):

- **Stamen** (:attr:`Selection.STAMEN`): the round of best pooled validation accuracy
  :math:`\sum_k c_k / \sum_k n_k` (correct and validation nodes of client ``k``), the
  earliest of ties.
- **Authors** (:attr:`Selection.AUTHORS`), as the code of Kim et al. (ICLR 2025,
  github sung-won-kim/FedLoG, ``main.py``) selects: the clients' validation accuracies
  :math:`a_k` averaged with weights :math:`m_k`, the client's *missing-class* node count
  (the code weighs the validation accuracies by the sixth field of a client's validation
  results, the unseen-class count, where its test accuracies use the test-node count),

  .. math:: \bar a = \frac{\sum_k m_k a_k}{\sum_k m_k},

  and the *latest* round of the best :math:`\bar a` (``best <= current`` replaces). A
  round where no client has a missing-class node has no such mean and is not a
  candidate.

Both report the same figures at the chosen round: seen graph, unseen node and missing
class pooled by node counts, new client the mean over clients (the authors' code does the
same). Only the clients' models are selected by the authors' rule: their code evaluates no
global model.
"""

from __future__ import annotations

import math
from enum import StrEnum

from stamen.contract.figures import VAL_ACC, Row, setting_nodes


class Selection(StrEnum):
    """A round-selection rule (module docstring)."""

    STAMEN = "stamen"
    AUTHORS = "authors"


MISSING_CLASS_NODES = setting_nodes("missing-class")


def authors_validation(row: Row) -> float | None:
    """The authors' validation figure of a row: client validation accuracies weighted by missing-class nodes."""
    clients = [c for c in row.get("per_client", {}).values() if VAL_ACC in c and MISSING_CLASS_NODES in c]
    total = sum(c[MISSING_CLASS_NODES] for c in clients)
    if total <= 0:
        return None
    return sum(c[VAL_ACC] * c[MISSING_CLASS_NODES] for c in clients) / total


def best_row(rows: list[Row], selection: Selection, prefix: str = "") -> Row | None:
    """The row ``selection`` reports (``prefix="global_"``: Stamen's rule on the global model's validation)."""
    if selection is Selection.STAMEN:
        candidates = [(row[f"{prefix}val_acc"], row) for row in rows if f"{prefix}val_acc" in row]
        return max(candidates, key=lambda pair: pair[0])[1] if candidates else None  # max keeps the first of ties
    if prefix:
        raise ValueError("the authors' selection applies to the clients' models only")
    best: tuple[float, Row] | None = None
    for row in rows:
        value = authors_validation(row)
        if value is not None and math.isfinite(value) and (best is None or best[0] <= value):
            best = (value, row)
    return best[1] if best else None
