"""Kernel ridge regression certificates against exhaustive relabelling."""

from itertools import combinations

import numpy as np
import pytest

from stamen.certify import bruteforce as bf
from stamen.certify import krr
from stamen.certify.solvers import SolverSpec


@pytest.mark.parametrize("ridge", [0.01, 1.0])
def test_binary_worst_case_equals_brute_force(ridge, make_problem):
    k_ll, k_tl, _, y = make_problem(0, m=10, num_targets=5)
    w = krr.krr_weights(k_ll, k_tl, ridge)
    assert np.allclose(krr.KernelRidge(ridge).fit(k_ll, y).decision_function(k_tl), w @ y)
    clean = w @ y
    signs = np.where(clean >= 0, 1.0, -1.0)
    sets, scores = bf.all_scores(k_ll, k_tl, y, None, 3, model="krr", ridge=ridge)
    for k in (0, 1, 2, 3):
        rows = [i for i, s in enumerate(sets) if len(s) <= k]
        worst_bf, _ = bf.worst_case([sets[i] for i in rows], scores[rows], signs)
        _, worst, flips = krr.worst_case_binary(w, y, k)
        assert np.allclose(worst, worst_bf, atol=1e-9)
        # replay the chosen flips
        for t in range(len(y) // 2):
            yy = y.copy()
            yy[flips[t]] *= -1
            assert (w @ yy)[t] == pytest.approx(worst[t], abs=1e-9)


def test_client_restricted_krr(make_problem):
    k_ll, k_tl, _, y = make_problem(1, m=10)
    w = krr.krr_weights(k_ll, k_tl, 0.5)
    mask = np.zeros(10, bool)
    mask[[1, 2, 7]] = True
    sets, scores = bf.all_scores(k_ll, k_tl, y, None, 2, flippable=mask, model="krr", ridge=0.5)
    signs = np.where(w @ y >= 0, 1.0, -1.0)
    worst_bf, _ = bf.worst_case(sets, scores, signs)
    _, worst, flips = krr.worst_case_binary(w, y, 2, mask)
    assert np.allclose(worst, worst_bf, atol=1e-9)
    assert all(set(f) <= {1, 2, 7} for f in flips)


def test_multiclass_worst_margin_equals_brute_force():
    rng = np.random.default_rng(4)
    labels = np.array([0, 0, 1, 1, 2, 2, 0])
    x = rng.standard_normal((10, 3)) + np.eye(3)[np.r_[labels, 0, 1, 2]]
    k = x @ x.T
    k_ll, k_tl = k[:7, :7], k[7:, :7]
    w = krr.krr_weights(k_ll, k_tl, 0.3)
    for budget in (1, 2):
        pred, worst = krr.worst_case_multiclass(w, labels, 3, budget)
        for t in range(3):
            best = np.full(3, np.inf)
            for size in range(budget + 1):
                for pos in combinations(range(7), size):
                    for new in bf._relabelings(labels, pos, 3):
                        p = w[t] @ np.eye(3)[new]
                        best = np.minimum(best, p[pred[t]] - p)
            for b in range(3):
                if b != pred[t]:
                    assert worst[t, b] == pytest.approx(best[b], abs=1e-9)


def test_collective_krr_equals_brute_force(make_problem):
    k_ll, k_tl, _, y = make_problem(2, m=9, num_targets=6)
    w = krr.krr_weights(k_ll, k_tl, 0.2)
    signs = np.where(w @ y >= 0, 1.0, -1.0)
    sets, scores = bf.all_scores(k_ll, k_tl, y, None, 3, model="krr", ridge=0.2)
    for k in (1, 2, 3):
        rows = [i for i, s in enumerate(sets) if len(s) <= k]
        out = krr.collective_binary(w, y, k, spec=SolverSpec("highs"))
        assert out.status == "optimal"
        assert out.objective == bf.collective_count(scores[rows], signs)


def test_krr_rejects_bad_ridge():
    with pytest.raises(ValueError, match="ridge"):
        krr.KernelRidge(0.0)
