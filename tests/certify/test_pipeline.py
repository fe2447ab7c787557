"""The pipeline (task -> one report) against the exhaustive oracle, for every model and mode."""

import numpy as np
import pytest

from stamen.certify import bruteforce as bf
from stamen.certify.data import Instance
from stamen.certify.outcome import Method, SolveStatus, Status
from stamen.certify.pipeline import run
from stamen.certify.registry import MODELS, MODES
from stamen.certify.solvers import SolverSpec
from stamen.certify.task import CertificationTask

HIGHS = SolverSpec("highs", 60)


def _instance(seed: int, m: int = 8, num_targets: int = 6, d: int = 4):
    """A binary instance with a PSD kernel over all nodes (labelled first, then targets)."""
    rng = np.random.default_rng(seed)
    n = m + num_targets
    x = rng.standard_normal((n, d))
    x[: m // 2] += 0.6
    x[m // 2 : m] -= 0.6
    kernel = x @ x.T + 0.2
    y = (np.arange(n) >= m // 2).astype(np.int64)  # class 0 (+1) first
    y[m:] = rng.integers(0, 2, num_targets)
    y[rng.choice(m, size=2, replace=False)] ^= 1  # label noise: alphas hit the box
    inst = Instance(x, np.zeros((2, 0), np.int64), y, 2, np.arange(m), np.arange(m, n), [7, 9], np.arange(100, 100 + n))
    return inst, kernel


def _oracle(inst, kernel, c, k, model="svm", ridge=1.0):
    """Per target: can some flip set of size <= k change (or zero) the clean sign?"""
    lab, tgt = inst.labeled, inst.targets
    y = inst.pm_labels(lab)
    sets, scores = bf.all_scores(kernel[np.ix_(lab, lab)], kernel[np.ix_(tgt, lab)], y, c, k, model=model, ridge=ridge)
    signs = np.where(scores[0] >= 0, 1.0, -1.0)
    return np.min(signs * scores, axis=0) <= 0, sets, scores, signs


@pytest.mark.parametrize("method", ["auto", "milp"])
def test_an_attackable_target_is_not_certified(method):
    # a certifier that certifies everything fails here: the oracle's flip set changes the prediction
    inst, kernel = _instance(4, m=12, num_targets=8, d=3)
    c = 0.1
    report = run(CertificationTask(inst, (0, 1, 2), C=c, kernel=kernel, solver=HIGHS, method=method))
    for k in (1, 2):
        _check_against_oracle(report, *_oracle(inst, kernel, c, k), k)


def _check_against_oracle(report, attackable, sets, scores, signs, k):
    assert attackable.any() and not attackable.all(), "the instance must have both kinds of targets"
    for t, record in enumerate(report.targets):
        status = record.budgets[k].status
        assert isinstance(status, Status)
        assert status == (Status.NOT_CERTIFIED if attackable[t] else Status.CERTIFIED), (t, record)
        if attackable[t]:  # its counterexample is a real one: retraining on it changes the sign
            flips = tuple(record.budgets[k].flips)
            assert len(flips) <= k and signs[t] * scores[sets.index(flips), t] <= 0
    aggregate = report.aggregates()[k]
    assert aggregate.certified_ratio == pytest.approx(1 - attackable.mean())
    assert aggregate.not_certified == int(attackable.sum())


def test_records_are_one_shape_for_every_model():
    inst, kernel = _instance(5)
    for model in MODELS:
        report = run(CertificationTask(inst, (0, 1), C=0.1, model=model, kernel=kernel, solver=HIGHS))
        assert [r.node for r in report.targets] == list(range(108, 114))
        for record in report.targets:
            assert record.predicted == (7 if record.clean_score >= 0 else 9)  # a zero score predicts class 0
            assert record.correct == (record.predicted == record.label)
            assert set(record.budgets) == {0, 1}
            assert record.budgets[0].method == Method.CLEAN or model == "krr"
            assert set(record.budgets[1].as_dict()) >= {"status", "method", "worst_case_score", "flips", "seconds"}
        attackable, *_ = _oracle(inst, kernel, 0.1, 1, model=model)
        assert attackable.any() and not attackable.all()
        assert [r.budgets[1].status == Status.NOT_CERTIFIED for r in report.targets] == attackable.tolist()
        correct = np.array([r.correct for r in report.targets])
        assert report.clean_accuracy == pytest.approx(correct.mean())


@pytest.mark.parametrize("model", list(MODELS))
def test_collective_count_matches_oracle(model):
    inst, kernel = _instance(3)
    report = run(CertificationTask(inst, (1, 2), C=1.0, model=model, mode="collective", kernel=kernel, solver=HIGHS))
    assert report.targets == []
    _, sets, scores, signs = _oracle(inst, kernel, 1.0, 2, model=model)
    for k in (1, 2):
        rows = [i for i, s in enumerate(sets) if len(s) <= k]
        outcome = report.collective[k]
        assert outcome.status == SolveStatus.OPTIMAL
        assert outcome.max_changed == bf.collective_count(scores[rows], signs)
        assert outcome.certified_lower_bound == len(inst.targets) - outcome.max_changed


def test_a_time_limit_is_never_certified():
    # HiGHS stopped by its time limit: PuLP says "Optimal", the report must not say certified
    inst, kernel = _instance(12, m=12, num_targets=2)
    tiny = SolverSpec("highs", 0.02)
    report = run(CertificationTask(inst, (3,), C=10.0, kernel=kernel, solver=tiny, method="milp", screen=False))
    statuses = [r.budgets[3].status for r in report.targets]
    assert Status.CERTIFIED not in statuses, statuses
    assert report.aggregates()[3].certified_ratio == 0.0


def test_task_rejects_bad_input():
    inst, kernel = _instance(4)
    with pytest.raises(ValueError, match="model 'gp' is not accepted; choose one of: svm, krr"):
        CertificationTask(inst, (1,), model="gp")
    with pytest.raises(ValueError, match=f"choose one of: {', '.join(MODES)}"):
        CertificationTask(inst, (1,), mode="both")
    with pytest.raises(ValueError, match="budgets must be >= 0"):
        CertificationTask(inst, (-1, 2))
    with pytest.raises(ValueError, match="C must be a positive number"):
        CertificationTask(inst, (1,), C=0.0)
    with pytest.raises(ValueError, match="needs the owner"):
        CertificationTask(inst, (1,), attacker="any")
    with pytest.raises(ValueError, match="not positive semi-definite"):
        CertificationTask(inst, (1,), kernel=-np.eye(inst.n))
