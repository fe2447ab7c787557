"""The MILP certificates against an exhaustive oracle (retrain on every flip set)."""

import numpy as np
import pytest

from stamen.certify import bruteforce as bf
from stamen.certify.cascade import CERTIFIED, NOT_CERTIFIED, certify_collective, certify_samplewise
from stamen.certify.cascade_multiclass import certify_multiclass
from stamen.certify.milp_collective import CollectiveMILP
from stamen.certify.milp_sample import PairwiseMILP, SampleWiseMILP
from stamen.certify.screening import RetrainCache, stability_radius
from stamen.certify.solvers import SolverSpec
from stamen.certify.svm import KernelSVM

HIGHS = SolverSpec("highs", 60)
CBC = SolverSpec("cbc", 60)


def _oracle(k_ll, k_tl, y, c, k, flippable=None):
    clean = KernelSVM(c).fit(k_ll, y)
    signs = np.where(k_tl @ clean.dual_coef_ >= 0, 1.0, -1.0)
    sets, scores = bf.all_scores(k_ll, k_tl, y, c, k, flippable)
    worst, _ = bf.worst_case(sets, scores, signs)
    return clean, signs, sets, scores, worst


@pytest.mark.parametrize("c", [0.01, 0.1, 1.0, 10.0])
def test_samplewise_milp_equals_brute_force(c, make_problem):
    k_ll, k_tl, _, y = make_problem(0)
    for k in (1, 2, 3):
        clean, signs, sets, scores, worst = _oracle(k_ll, k_tl, y, c, k)
        for t in range(len(k_tl)):
            res = SampleWiseMILP(k_ll, y, c, k_tl[t], signs[t], alpha_start=clean.alpha_).solve(k, HIGHS)
            assert res.status == "optimal"
            assert res.objective == pytest.approx(worst[t], abs=1e-6)


def test_replay_k0_and_monotone_in_budget(make_problem):
    k_ll, k_tl, _, y = make_problem(2)
    c = 1.0
    cache = RetrainCache(k_ll, k_tl, y, c)
    clean = cache.scores(frozenset())
    for t in range(len(k_tl)):
        sign = 1.0 if clean[t] >= 0 else -1.0
        model = SampleWiseMILP(k_ll, y, c, k_tl[t], sign, alpha_start=cache.clean.alpha_)
        prev = None
        for k in (0, 1, 2, 3):  # one model re-solved for every budget
            res = model.solve(k, HIGHS)
            assert len(res.flips) <= k
            # retraining on the MILP's own flip set reproduces its objective
            assert cache.scores(frozenset(res.flips))[t] == pytest.approx(res.objective, abs=1e-6)
            if k == 0:
                assert res.objective == pytest.approx(clean[t], abs=1e-9)
            else:
                assert sign * res.objective <= sign * prev + 1e-9
            prev = res.objective


def test_highs_and_cbc_agree(make_problem):
    k_ll, k_tl, _, y = make_problem(3)
    c = 0.5
    clean = KernelSVM(c).fit(k_ll, y)
    signs = np.where(k_tl @ clean.dual_coef_ >= 0, 1.0, -1.0)
    for t in range(len(k_tl)):
        for k in (1, 2):
            a = SampleWiseMILP(k_ll, y, c, k_tl[t], signs[t], alpha_start=clean.alpha_).solve(k, HIGHS)
            b = SampleWiseMILP(k_ll, y, c, k_tl[t], signs[t], alpha_start=clean.alpha_).solve(k, CBC)
            assert a.status == b.status == "optimal"
            assert a.objective == pytest.approx(b.objective, abs=1e-6)


@pytest.mark.parametrize("c", [0.1, 1.0])
def test_decision_version_matches_oracle(c, make_problem):
    k_ll, k_tl, _, y = make_problem(4)
    for k in (1, 2):
        clean, signs, _, _, worst = _oracle(k_ll, k_tl, y, c, k)
        for t in range(len(k_tl)):
            res = SampleWiseMILP(k_ll, y, c, k_tl[t], signs[t]).solve(k, HIGHS, decide=True)
            robust = signs[t] * worst[t] > 0
            assert res.status == ("infeasible" if robust else "optimal")


@pytest.mark.parametrize("c", [0.1, 1.0, 10.0])
def test_collective_count_equals_brute_force(c, make_problem):
    k_ll, k_tl, _, y = make_problem(5, m=8, num_targets=6)
    clean = KernelSVM(c).fit(k_ll, y)
    signs = np.where(k_tl @ clean.dual_coef_ >= 0, 1.0, -1.0)
    sets, scores = bf.all_scores(k_ll, k_tl, y, c, 3)
    assert np.min(np.abs(scores)) > 1e-7  # no ties with zero: the count is well defined
    model = CollectiveMILP(k_ll, y, c, k_tl, signs, alpha_start=clean.alpha_)
    for k in (1, 2, 3):
        rows = [i for i, s in enumerate(sets) if len(s) <= k]
        res = model.solve(k, HIGHS)
        assert res.status == "optimal"
        assert res.objective == bf.collective_count(scores[rows], signs)


@pytest.mark.parametrize("method", ["milp", "enumerate"])
def test_collective_orchestration_with_screening_matches_oracle(method, make_problem):
    k_ll, k_tl, k_tt, y = make_problem(6, m=8, num_targets=6)
    c = 1.0
    clean = KernelSVM(c).fit(k_ll, y)
    signs = np.where(k_tl @ clean.dual_coef_ >= 0, 1.0, -1.0)
    sets, scores = bf.all_scores(k_ll, k_tl, y, c, 2)
    out = certify_collective(k_ll, k_tl, y, c, [0, 1, 2], spec=HIGHS, k_tt=k_tt, method=method)
    for k in (1, 2):
        rows = [i for i, s in enumerate(sets) if len(s) <= k]
        assert out[k].max_changed == bf.collective_count(scores[rows], signs)


def test_client_restricted_budget_matches_oracle(make_problem):
    k_ll, k_tl, k_tt, y = make_problem(7, m=10)
    c = 1.0
    flippable = np.zeros(10, dtype=bool)
    flippable[[0, 3, 5, 8]] = True
    for k in (1, 2, 3):
        clean, signs, _, _, worst = _oracle(k_ll, k_tl, y, c, k, flippable)
        for t in range(len(k_tl)):
            res = SampleWiseMILP(k_ll, y, c, k_tl[t], signs[t], flippable).solve(k, HIGHS)
            assert res.objective == pytest.approx(worst[t], abs=1e-6)
            assert set(res.flips) <= {0, 3, 5, 8}


@pytest.mark.parametrize(
    "screen,method,limit",
    [(True, "milp", 0), (False, "milp", 0), (True, "enumerate", 0), (True, "auto", 11), (False, "auto", 56)],
)
def test_samplewise_statuses_match_oracle(screen, method, limit, make_problem):
    # auto with limit 11 sweeps budget 1 (11 sets) and leaves 2, 3 to screening + MILP;
    # limit 56 sweeps budgets 1, 2 (56 sets) and leaves 3 to the MILP
    k_ll, k_tl, k_tt, y = make_problem(8, m=10, num_targets=5)
    c = 0.5
    clean, signs, sets, scores, _ = _oracle(k_ll, k_tl, y, c, 3)
    outs = certify_samplewise(
        k_ll, k_tl, y, c, [0, 1, 2, 3], spec=HIGHS, screen=screen, k_tt=k_tt, method=method, enumerate_limit=limit
    )
    swept = {"milp": 0, "enumerate": 3, "auto": {11: 1, 56: 2}.get(limit)}[method]
    for t, out in enumerate(outs):
        for k in (0, 1, 2, 3):
            rows = [i for i, s in enumerate(sets) if len(s) <= k]
            worst = np.min(signs[t] * scores[rows, t])
            robust = worst > 0
            assert out.budgets[k].status == (CERTIFIED if robust else NOT_CERTIFIED), (t, k, out.budgets[k])
            if 0 < k <= swept:
                assert out.budgets[k].method == "enumerate"
                assert out.budgets[k].worst_case_score == pytest.approx(signs[t] * worst, abs=1e-9)
            elif k > swept:
                assert out.budgets[k].method != "enumerate"


def test_stability_radius_is_sound(make_problem):
    k_ll, k_tl, k_tt, y = make_problem(9, m=10)
    for c in (0.1, 1.0, 10.0):
        _, _, sets, scores, _ = _oracle(k_ll, k_tl, y, c, 2)
        for k in (1, 2):
            rows = [i for i, s in enumerate(sets) if len(s) <= k]
            change = np.max(np.abs(scores[rows] - scores[0]), axis=0)
            assert np.all(change <= stability_radius(np.diag(k_ll), k_tt, c, k) + 1e-9)


def test_multiclass_pairwise_equals_brute_force():
    rng = np.random.default_rng(11)
    labels = np.array([0, 0, 1, 1, 2, 2])
    x = rng.standard_normal((8, 3)) + 1.5 * np.eye(3)[np.r_[labels, 0, 1]]
    k = x @ x.T + 0.1
    k_ll, k_tl = k[:6, :6], k[6:, :6]
    c = 1.0
    from stamen.certify.svm import OneVsAllSVM

    ova = OneVsAllSVM(c).fit(k_ll, labels, 3)
    for t in range(2):
        a = int(np.argmax(ova.decision_function(k_tl[t : t + 1])[0]))
        for budget in (1, 2):
            oracle = bf.multiclass_worst_margins(k_ll, k_tl[t], labels, c, budget, 3)
            for b in range(3):
                if b == a:
                    continue
                res = PairwiseMILP(k_ll, labels, c, k_tl[t], a, b).solve(budget, HIGHS)
                assert res.status == "optimal"
                assert res.objective == pytest.approx(oracle[b], abs=1e-6)
        outs = certify_multiclass(k_ll, k_tl[t : t + 1], labels, c, [1, 2], 3, spec=HIGHS)
        for budget in (1, 2):
            oracle = bf.multiclass_worst_margins(k_ll, k_tl[t], labels, c, budget, 3)
            robust = np.nanmin(oracle) > 0
            assert outs[0].budgets[budget].status == (CERTIFIED if robust else NOT_CERTIFIED)


def test_time_limit_is_never_certified(make_problem):
    # HiGHS stops at the time limit; PuLP calls that "Optimal", the certificate must not
    k_ll, k_tl, k_tt, y = make_problem(12, m=12, num_targets=2)
    tiny = SolverSpec("highs", 0.02)
    clean = KernelSVM(10.0).fit(k_ll, y)
    sign = 1.0 if (k_tl @ clean.dual_coef_)[0] >= 0 else -1.0
    res = SampleWiseMILP(k_ll, y, 10.0, k_tl[0], sign, alpha_start=clean.alpha_).solve(3, tiny)
    assert res.status == "unknown" and "Time limit" in res.raw_status
    outs = certify_samplewise(k_ll, k_tl, y, 10.0, [3], spec=tiny, screen=False, method="milp")
    for out in outs:
        assert out.budgets[3].status != CERTIFIED
