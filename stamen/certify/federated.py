"""Label-flip certificates in federated graph learning: the attacker is one client.

The attacking client may flip up to ``k`` labels of its *own* labelled nodes
(``flippable`` = that client's mask). Against an unknown attacking client
(``attacker any``) a prediction is certified iff it is certified against every
client; it is not certified as soon as one client can change it; otherwise unknown.

A client certifying its own predictions in a federated run (:mod:`stamen.client.certification`)
is the ordinary pipeline on its subgraph with every labelled node its own, so it needs
nothing from this module.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from stamen.certify.cascade import certify_samplewise
from stamen.certify.outcome import BudgetOutcome, Method, Status, TargetOutcome
from stamen.certify.solvers import SolverSpec


def combine_any(per_client: list[list[TargetOutcome]]) -> list[dict[int, Status]]:
    """Status per target and budget against an unknown attacking client (worst case)."""
    combined = []
    for outs in zip(*per_client):
        statuses = {}
        for k in outs[0].budgets:
            sts = [o.budgets[k].status for o in outs]
            if Status.NOT_CERTIFIED in sts:
                statuses[k] = Status.NOT_CERTIFIED
            elif all(s == Status.CERTIFIED for s in sts):
                statuses[k] = Status.CERTIFIED
            else:
                statuses[k] = Status.UNKNOWN
        combined.append(statuses)
    return combined


def certify_against_clients(
    k_ll: np.ndarray,
    k_tl: np.ndarray,
    y: np.ndarray,
    c: float,
    budgets: list[int],
    owner: np.ndarray,
    attacker: int | str,
    spec: SolverSpec = SolverSpec(),
    k_tt: np.ndarray | None = None,
    skip: Collection[int] = (),
    **method,
) -> tuple[dict[int, list[TargetOutcome]], list[dict[int, Status]]]:
    """Sample-wise statuses when client ``attacker`` (an int or ``"any"``) flips its labels.

    ``owner[i]`` is the client of labelled position ``i``. Returns ``(outcomes, statuses)``
    where ``outcomes`` maps client id to :func:`stamen.certify.cascade.certify_samplewise` results
    (of the targets not in ``skip``).
    """
    owner = np.asarray(owner)
    clients = sorted(set(owner.tolist())) if attacker == "any" else [int(attacker)]
    if attacker != "any" and int(attacker) not in set(owner.tolist()):
        raise ValueError(f"attacker client {attacker} owns no labelled node; clients: {sorted(set(owner.tolist()))}")
    outcomes = {
        cl: certify_samplewise(
            k_ll, k_tl, y, c, budgets, flippable=(owner == cl), spec=spec, k_tt=k_tt, skip=skip, **method
        )
        for cl in clients
    }
    statuses = combine_any([outcomes[cl] for cl in clients])
    return outcomes, statuses


def merge_clients(outcomes: dict[int, list[TargetOutcome]]) -> list[TargetOutcome]:
    """One outcome per target and budget over the attacking clients (method ``clients``).

    The status is :func:`combine_any`'s; the worst-case score the worst over the clients
    that have one; ``per_client`` keeps each client's status.
    """
    clients = sorted(outcomes)
    statuses = combine_any([outcomes[cl] for cl in clients])
    merged = []
    for i, first in enumerate(outcomes[clients[0]]):
        out = TargetOutcome(first.position, first.clean_score)
        for k in first.budgets:
            per = [outcomes[cl][i].budgets[k] for cl in clients]
            worst = [b.worst_case_score for b in per if b.worst_case_score is not None]
            out.budgets[k] = BudgetOutcome(
                statuses[i][k],
                Method.CLIENTS,
                (min(worst) if first.clean_score >= 0 else max(worst)) if worst else None,
                None,
                None,
                float(sum(b.seconds for b in per)),
                any(b.milp for b in per),
                per_client={cl: outcomes[cl][i].budgets[k].status for cl in clients},
            )
        merged.append(out)
    return merged
