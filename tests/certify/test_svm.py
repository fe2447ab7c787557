import numpy as np
import pytest

from stamen.certify.svm import KernelSVM, OneVsAllSVM, kkt_residual, select_C, solve_box_qp


@pytest.mark.parametrize("c", [0.01, 0.1, 1.0, 10.0, 100.0])
def test_dual_solution_meets_kkt_to_1e10(c, make_problem):
    k_ll, _, _, y = make_problem(1, m=12)
    svm = KernelSVM(c).fit(k_ll, y)
    q = np.outer(y, y) * k_ll
    assert kkt_residual(q, svm.alpha_, c) <= 1e-10
    assert np.all(svm.alpha_ >= 0) and np.all(svm.alpha_ <= c)


def test_singular_kernel_and_warm_start_agree():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((15, 2))  # rank-2 kernel on 15 points
    k = x @ x.T
    y = np.where(rng.random(15) < 0.5, 1.0, -1.0)
    q = np.outer(y, y) * k
    cold = solve_box_qp(q, 5.0)
    warm = solve_box_qp(q, 5.0, alpha0=np.full(15, 2.5))
    # dual solutions may differ on a singular kernel; the predictions may not
    assert np.allclose(k @ (y * cold), k @ (y * warm), atol=1e-8)


def test_alpha_covers_zero_interior_and_box(make_problem):
    seen = set()
    for c in (0.01, 0.1, 1.0, 10.0):
        k_ll, _, _, y = make_problem(0)
        a = KernelSVM(c).fit(k_ll, y).alpha_
        seen |= {"zero"} if np.any(a == 0) else set()
        seen |= {"box"} if np.any(a == c) else set()
        seen |= {"inside"} if np.any((a > 0) & (a < c)) else set()
    assert seen == {"zero", "inside", "box"}


def test_one_vs_all_and_cv():
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 6)
    x = rng.standard_normal((18, 3)) + 2.0 * np.eye(3)[labels]
    k = x @ x.T
    model = OneVsAllSVM(1.0).fit(k, labels)
    assert np.mean(model.predict(k) == labels) > 0.8
    best, scores = select_C(k, labels, candidates=(0.01, 1.0), folds=3)
    assert best in (0.01, 1.0) and set(scores) == {0.01, 1.0}


def test_svm_rejects_bad_input():
    with pytest.raises(ValueError, match="C must be a positive"):
        KernelSVM(0.0)
    with pytest.raises(ValueError, match="labels must be -1 or"):
        KernelSVM(1.0).fit(np.eye(2), np.array([0, 1]))
    with pytest.raises(ValueError, match="one label per kernel row"):
        KernelSVM(1.0).fit(np.eye(3), np.array([1, -1]))
