"""The exact speed-ups (exhaustive sweep, tighter MILP bounds) against the oracle."""

from itertools import product

import numpy as np
import pytest

from stamen.certify import bruteforce as bf
from stamen.certify import exhaustive
from stamen.certify.cascade import certify_collective, certify_samplewise
from stamen.certify.milp import h_bounds
from stamen.certify.milp_sample import SampleWiseMILP
from stamen.certify.solvers import SolverSpec
from stamen.certify.svm import KernelSVM

HIGHS = SolverSpec("highs", 60)


@pytest.mark.parametrize("c", [0.01, 0.1, 1.0, 10.0])
def test_h_bounds_hold_for_every_label_vector(c, make_problem):
    # |f(x_i)| <= h_bounds for all 2^m label vectors (not only those within a budget)
    for seed in range(2):
        k_ll, _, _, _ = make_problem(20 + seed, m=7)
        bound = h_bounds(k_ll, c)
        worst = np.zeros(len(k_ll))
        for labels in product((-1.0, 1.0), repeat=len(k_ll)):
            f = k_ll @ KernelSVM(c).fit(k_ll, np.array(labels)).dual_coef_
            worst = np.maximum(worst, np.abs(f))
        assert np.all(worst <= bound + 1e-9)
        if c == 10.0:  # the strong-duality bound is the binding one for large C
            assert np.all(bound < c * np.abs(k_ll).sum(axis=1))


@pytest.mark.parametrize("c", [0.01, 0.1, 1.0, 10.0])
def test_sweep_equals_brute_force(c, make_problem):
    k_ll, k_tl, _, y = make_problem(30, m=9, num_targets=4)
    flippable = np.ones(9, dtype=bool)
    flippable[[1, 4]] = False
    clean = KernelSVM(c).fit(k_ll, y)
    signs = np.where(k_tl @ clean.dual_coef_ >= 0, 1.0, -1.0)
    sw = exhaustive.sweep(k_ll, k_tl, y, c, 3, flippable)
    assert sw.retrains == exhaustive.num_flip_sets(7, 3) - 1
    for k in (0, 1, 2, 3):
        sets, scores = bf.all_scores(k_ll, k_tl, y, c, k, flippable)
        worst, _ = bf.worst_case(sets, scores, signs)
        got, got_sets = sw.upto(k)
        np.testing.assert_allclose(signs * got, worst, atol=1e-9)
        for t, s in enumerate(got_sets):
            assert len(s) <= k and flippable[list(s)].all()
            row = sets.index(tuple(s))
            assert signs[t] * scores[row, t] == pytest.approx(got[t], abs=1e-12)
        count, cset = sw.collective_upto(k)
        assert count == bf.collective_count(scores, signs)
        assert np.sum(signs * scores[sets.index(tuple(cset))] <= 0) == count


def test_num_flip_sets():
    assert exhaustive.num_flip_sets(20, 3) == 1 + 20 + 190 + 1140
    assert exhaustive.num_flip_sets(5, 0) == 1


@pytest.mark.parametrize("c", [1.0, 10.0])
def test_tight_milp_matches_sweep_at_large_c(c, make_problem):
    k_ll, k_tl, _, y = make_problem(31, m=8, num_targets=2)
    sw = exhaustive.sweep(k_ll, k_tl, y, c, 2)
    worst, _ = sw.upto(2)
    for t in range(2):
        res = SampleWiseMILP(k_ll, y, c, k_tl[t], sw.signs[t]).solve(2, HIGHS)
        assert res.status == "optimal"
        assert res.objective == pytest.approx(sw.signs[t] * worst[t], abs=1e-6)
        dec = SampleWiseMILP(k_ll, y, c, k_tl[t], sw.signs[t]).solve(2, HIGHS, decide=True)
        assert dec.status == ("infeasible" if worst[t] > 1e-7 else "optimal")


def test_auto_and_milp_agree_and_collective_enumeration(make_problem):
    k_ll, k_tl, k_tt, y = make_problem(32, m=10, num_targets=6)
    c = 2.0
    a = certify_samplewise(k_ll, k_tl, y, c, [0, 1, 2], spec=HIGHS, k_tt=k_tt, method="auto")
    b = certify_samplewise(k_ll, k_tl, y, c, [0, 1, 2], spec=HIGHS, k_tt=k_tt, method="milp")
    for oa, ob in zip(a, b):
        for k in (0, 1, 2):
            assert oa.budgets[k].status == ob.budgets[k].status
    ce = certify_collective(k_ll, k_tl, y, c, [1, 2], spec=HIGHS, k_tt=k_tt, method="enumerate")
    cm = certify_collective(k_ll, k_tl, y, c, [1, 2], spec=HIGHS, k_tt=k_tt, method="milp")
    for k in (1, 2):
        assert ce[k].method == "enumerate"
        assert ce[k].max_changed == cm[k].max_changed


def test_unknown_method_rejected(make_problem):
    k_ll, k_tl, k_tt, y = make_problem(33, m=6)
    with pytest.raises(ValueError, match="unknown method"):
        certify_samplewise(k_ll, k_tl, y, 1.0, [1], method="fast")
