"""Attack-first certificates on worker processes give the sequential MILP-only answers.

Each target's status per budget from the sequential path that sends every budget > 0 to
the MILP (``workers=1, method="milp", screen=False``) is compared with the default path
(sweep, bound, verified attack, MILP) on two worker processes; a target the attack proves
not certified carries a flip set that a fresh retraining confirms.
"""

import numpy as np
import pytest

from stamen.certify import bruteforce as bf
from stamen.certify.cascade import certify_samplewise
from stamen.certify.cascade_multiclass import certify_multiclass
from stamen.certify.outcome import Method, Status
from stamen.certify.solvers import SolverSpec
from stamen.certify.svm import KernelSVM, OneVsAllSVM

HIGHS = SolverSpec("highs", 60)
BUDGETS = [0, 1, 2]


def _multiclass_problem(seed: int = 7, per_class: int = 3, classes: int = 3, targets: int = 6):
    """A small graph-like PSD kernel: features of class means plus noise, a ring of edges smoothing them."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), per_class)
    truth = np.r_[labels, rng.integers(0, classes, targets)]
    x = rng.standard_normal((len(truth), 4)) * 0.9 + 1.2 * np.eye(classes, 4)[truth]
    n = len(truth)
    adj = np.eye(n)
    for i in range(n):
        adj[i, (i + 1) % n] = adj[(i + 1) % n, i] = 1.0
    prop = adj / adj.sum(axis=1, keepdims=True)
    k = prop @ x @ x.T @ prop.T + 0.05
    m = len(labels)
    return k[:m, :m], k[m:, :m], np.diag(k)[m:], labels


def _statuses(outcomes):
    return [{k: b.status for k, b in out.budgets.items()} for out in outcomes]


def test_multiclass_parallel_attack_first_equals_sequential_milp():
    k_ll, k_tl, k_tt, labels = _multiclass_problem()
    c = 0.1
    reference = certify_multiclass(
        k_ll, k_tl, labels, c, BUDGETS, 3, spec=HIGHS, k_tt=k_tt, screen=False, method="milp", workers=1
    )
    heard = []
    attack_first = certify_multiclass(
        k_ll, k_tl, labels, c, BUDGETS, 3, spec=HIGHS, k_tt=k_tt, method="milp", workers=2, on_target=heard.append
    )
    swept = certify_multiclass(k_ll, k_tl, labels, c, BUDGETS, 3, spec=HIGHS, k_tt=k_tt, workers=2)
    assert {b.method for out in reference for k, b in out.budgets.items() if k > 0} == {Method.MILP, Method.MONOTONE}
    assert _statuses(attack_first) == _statuses(reference)
    assert _statuses(swept) == _statuses(reference)
    assert sorted(out.position for out in heard) == list(range(len(k_tl)))  # each target heard once, here
    methods = {b.method for out in attack_first for b in out.budgets.values()}
    assert {Method.ATTACK, Method.BOUND, Method.MILP} <= methods  # attack and bound spared MILPs; MILP for the rest
    assert {b.method for out in swept for k, b in out.budgets.items() if k > 0} <= {Method.ENUMERATE, Method.MONOTONE}
    # both answers are the exhaustive oracle's
    for t, out in enumerate(reference):
        for k in (1, 2):
            robust = np.nanmin(bf.multiclass_worst_margins(k_ll, k_tl[t], labels, c, k, 3)) > 0
            assert out.budgets[k].status == (Status.CERTIFIED if robust else Status.NOT_CERTIFIED)


def test_multiclass_attack_carries_a_verified_relabelling():
    k_ll, k_tl, k_tt, labels = _multiclass_problem()
    c = 0.1
    outs = certify_multiclass(k_ll, k_tl, labels, c, BUDGETS, 3, spec=HIGHS, k_tt=k_tt, method="milp")
    clean = OneVsAllSVM(c).fit(k_ll, labels, 3).decision_function(k_tl)
    attacked = [(out, k, b) for out in outs for k, b in out.budgets.items() if b.method == Method.ATTACK]
    assert attacked
    for out, k, b in attacked:
        assert b.status == Status.NOT_CERTIFIED and b.relabel is not None
        assert sorted(b.relabel) == b.flips and len(b.flips) <= k
        new = labels.copy()
        for i, cl in b.relabel.items():
            assert cl != labels[i]
            new[i] = cl
        a = int(np.argmax(clean[out.position]))
        scores = OneVsAllSVM(c).fit(k_ll, new, 3).decision_function(k_tl[out.position][None, :])[0]
        assert scores[a] - np.max(np.delete(scores, a)) <= 0  # the prediction a is overtaken
        assert b.as_dict()["relabel"] == {str(i): cl for i, cl in b.relabel.items()}


def test_binary_parallel_attack_first_equals_sequential_milp(make_problem):
    k_ll, k_tl, k_tt, y = make_problem(5, m=10, num_targets=6)
    c = 0.1
    reference = certify_samplewise(k_ll, k_tl, y, c, BUDGETS, spec=HIGHS, screen=False, method="milp", workers=1)
    attack_first = certify_samplewise(k_ll, k_tl, y, c, BUDGETS, spec=HIGHS, k_tt=k_tt, method="milp", workers=2)
    assert _statuses(attack_first) == _statuses(reference)
    attacked = [(out, k, b) for out in attack_first for k, b in out.budgets.items() if b.method == Method.ATTACK]
    assert attacked
    clean = k_tl @ KernelSVM(c).fit(k_ll, y).dual_coef_
    for out, k, b in attacked:
        flipped = y.copy()
        flipped[b.flips] *= -1
        score = k_tl[out.position] @ KernelSVM(c).fit(k_ll, flipped).dual_coef_
        assert len(b.flips) <= k and np.sign(clean[out.position]) * score <= 0


@pytest.mark.parametrize("workers", [0, -1])
def test_workers_must_be_positive(workers):
    from stamen.certify.data import Instance
    from stamen.certify.task import CertificationTask

    inst = Instance(
        np.eye(4),
        np.zeros((2, 0), np.int64),
        np.array([0, 1, 0, 1]),
        2,
        np.array([0, 1]),
        np.array([2, 3]),
        [0, 1],
        np.arange(4),
    )
    with pytest.raises(ValueError, match="workers"):
        CertificationTask(inst, (1,), workers=workers)
