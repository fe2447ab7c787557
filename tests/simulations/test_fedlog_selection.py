"""FedLoG's round selections from one run's rows: Stamen's (pooled validation, earliest of ties) and the
authors' (client validation accuracies weighted by missing-class nodes, latest of ties)."""

import pytest

from stamen.benches.fedlog_selection import Selection, authors_validation, best_row
from stamen.contract.figures import VAL_ACC, setting_nodes

MISSING = setting_nodes("missing-class")


def row(number, pooled, clients):
    """A round's row: pooled validation accuracy and per client (validation accuracy, missing-class nodes)."""
    per_client = {str(k): {VAL_ACC: acc, MISSING: nodes} for k, (acc, nodes) in enumerate(clients)}
    return {"round": number, VAL_ACC: pooled, "per_client": per_client}


def test_authors_weigh_client_validation_by_missing_class_nodes():
    assert authors_validation(row(1, 0.5, [(0.9, 30), (0.6, 10)])) == pytest.approx((0.9 * 30 + 0.6 * 10) / 40)
    assert authors_validation(row(1, 0.5, [(0.9, 0), (0.6, 0)])) is None  # no missing-class node: no figure


def test_the_two_rules_pick_different_rounds_from_the_same_rows():
    rows = [
        row(1, 0.80, [(0.80, 0), (0.80, 50)]),  # authors: 0.80
        row(2, 0.85, [(0.95, 0), (0.70, 50)]),  # Stamen's best; authors: 0.70 (client 0 weighs nothing)
        row(3, 0.80, [(0.60, 0), (0.80, 50)]),  # authors: 0.80 again, a tie: the later round wins
        row(4, 0.85, [(0.90, 0), (0.75, 50)]),  # Stamen: a tie with round 2, the earlier wins
    ]
    assert best_row(rows, Selection.STAMEN)["round"] == 2
    assert best_row(rows, Selection.AUTHORS)["round"] == 3
    assert best_row(rows, Selection.STAMEN, "global_") is None  # no global figures in these rows
    with pytest.raises(ValueError, match="clients' models only"):
        best_row(rows, Selection.AUTHORS, "global_")
