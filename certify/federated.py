"""Label-flip certificates in federated graph learning.

The attacker is one client: it may flip up to ``k`` labels of its *own* labelled
nodes (``flippable`` = that client's mask). Against an unknown attacking client
(``attacker any``) a prediction is certified iff it is certified against every
client; it is not certified as soon as one client can change it.

:func:`client_certified_ratios` is a pure function a Flower client can call on its own
subgraph: it computes the NTK there, trains the SVM on its labelled nodes and
returns aggregate certified ratios per budget (its own labels are the flippable ones).
"""

from __future__ import annotations

import numpy as np

from certify.milp import CERTIFIED, NOT_CERTIFIED, UNKNOWN, TargetOutcome, certify_samplewise
from certify.ntk import ntk
from certify.solvers import SolverSpec


def combine_any(per_client: list[list[TargetOutcome]]) -> list[dict[int, str]]:
    """Status per target and budget against an unknown attacking client (worst case)."""
    combined = []
    for outs in zip(*per_client):
        statuses = {}
        for k in outs[0].budgets:
            sts = [o.budgets[k].status for o in outs]
            if NOT_CERTIFIED in sts:
                statuses[k] = NOT_CERTIFIED
            elif all(s == CERTIFIED for s in sts):
                statuses[k] = CERTIFIED
            else:
                statuses[k] = UNKNOWN
        combined.append(statuses)
    return combined


def certify_against_clients(k_ll, k_tl, y, c, budgets, owner, attacker, spec=SolverSpec(), k_tt=None, **method):
    """Sample-wise statuses when client ``attacker`` (an int or ``"any"``) flips its labels.

    ``owner[i]`` is the client of labelled position ``i``. Returns ``(outcomes, statuses)``
    where ``outcomes`` maps client id to :func:`certify_samplewise` results.
    """
    owner = np.asarray(owner)
    clients = sorted(set(owner.tolist())) if attacker == "any" else [int(attacker)]
    if attacker != "any" and int(attacker) not in set(owner.tolist()):
        raise ValueError(f"attacker client {attacker} owns no labelled node; clients: {sorted(set(owner.tolist()))}")
    outcomes = {
        cl: certify_samplewise(k_ll, k_tl, y, c, budgets, flippable=(owner == cl), spec=spec, k_tt=k_tt, **method)
        for cl in clients
    }
    statuses = combine_any([outcomes[cl] for cl in clients])
    return outcomes, statuses


def client_certified_ratios(
    x: np.ndarray,
    edge_index: np.ndarray,
    y: np.ndarray,
    labeled: np.ndarray,
    targets: np.ndarray,
    budgets: list[int],
    arch: str = "gcn",
    depth: int = 1,
    C: float = 0.1,
    solver: str = "highs",
    time_limit: float = 60.0,
) -> dict[int, dict[str, float]]:
    """Certified ratios of a client's targets against flips of its own labels.

    Args:
        x, edge_index: the client's subgraph (local node ids).
        y: binary labels of the subgraph's nodes as ``+-1`` (or 0/1: 0 -> -1).
        labeled, targets: local indices of labelled nodes and of nodes to certify.
        budgets: flip budgets.

    Returns:
        ``{k: {"certified_ratio", "certified_accuracy", "unknown_ratio", "num_targets"}}``
        (plain floats, ready for a Flower metrics dict).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y)
    y_pm = np.where(y > 0, 1.0, -1.0)
    labeled = np.asarray(labeled, dtype=np.int64)
    targets = np.asarray(targets, dtype=np.int64)
    kern = ntk(x, np.asarray(edge_index), arch=arch, depth=depth)
    outs = certify_samplewise(
        kern[np.ix_(labeled, labeled)],
        kern[np.ix_(targets, labeled)],
        y_pm[labeled],
        C,
        budgets,
        spec=SolverSpec(solver, time_limit),
        k_tt=np.diag(kern)[targets],
    )
    result = {}
    for k in sorted({int(b) for b in budgets}):
        cert = np.array([o.budgets[k].status == CERTIFIED for o in outs])
        unk = np.array([o.budgets[k].status == UNKNOWN for o in outs])
        correct = np.array([np.sign(o.clean_score) == y_pm[t] for o, t in zip(outs, targets)])
        result[k] = {
            "certified_ratio": float(cert.mean()),
            "certified_accuracy": float((cert & correct).mean()),
            "unknown_ratio": float(unk.mean()),
            "num_targets": float(len(outs)),
        }
    return result
