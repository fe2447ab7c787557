r"""Sample-wise MILP formulations: the worst-case score of one target, binary or multi-class.

:class:`SampleWiseMILP` minimises :math:`s_tp_t` (the clean sign times the score) over
flip sets of size :math:`\le k` subject to the SVM's KKT system
(:func:`stamen.certify.milp.kkt_block`); one model is re-solved for every budget (only the
right-hand side of the budget constraint changes). The decision version adds
:math:`s_tp_t\le0` and certifies on infeasibility. :class:`PairwiseMILP` is the
multi-class (one-vs-all) counterpart: one-hot perturbed labels shared by the SVMs of the
predicted class :math:`a` and a rival :math:`b` (:math:`\ell^a_i+\ell^b_i\le1`),
minimising :math:`p^a_t-p^b_t`; a label moved to a third class is :math:`-1` in both.
"""

from __future__ import annotations

import time

import numpy as np
import pulp

from stamen.certify.milp import BudgetConstraint, binary_labels, check_inputs, kkt_block, read_flips
from stamen.certify.outcome import MILPResult, SolveStatus
from stamen.certify.solvers import SolverSpec, make_solver, read_status


class SampleWiseMILP:
    """Worst-case score of one target under at most ``budget`` flips; one model, many budgets.

    Args:
        k_ll: kernel among the labelled nodes, ``(m, m)``.
        y: labels ``+-1``, ``(m,)``.
        c: SVM box bound C.
        k_t: kernel row of the target against the labelled nodes, ``(m,)``.
        sign: sign of the clean score (+1 or -1); the MILP minimises ``sign * score``.
        flippable: which labels the attacker may flip (default: all).
        alpha_start: clean SVM dual solution for the warm start.
    """

    def __init__(self, k_ll, y, c: float, k_t, sign: float, flippable=None, alpha_start=None) -> None:
        k_ll, y, flippable = check_inputs(k_ll, y, c, flippable)
        self.y, self.c, self.sign = y, float(c), float(sign)
        self.k_t = np.asarray(k_t, dtype=np.float64)
        self.prob = pulp.LpProblem("samplewise", pulp.LpMinimize)
        self.labels, flips = binary_labels(y, flippable)
        self.block = kkt_block(self.prob, "", k_ll, self.c, self.labels, alpha_start)
        self.score = pulp.lpSum(float(self.k_t[j]) * self.block["zeta"][j] for j in range(len(y)) if self.k_t[j] != 0)
        self._budget = BudgetConstraint(self.prob, flips)
        self.prob.setObjective(self.sign * self.score)

    def solve(self, budget: int, spec: SolverSpec, decide: bool = False) -> MILPResult:
        """Optimisation version (``decide=False``) or decision version (infeasible = certified)."""
        self._budget.set(budget)
        prob = self.prob
        if decide:
            prob.addConstraint(self.sign * self.score <= 0, "flip_sign")
        t0 = time.perf_counter()
        try:
            prob.solve(make_solver(spec, warm_start=not decide))
        finally:
            if decide:
                prob._constraints.pop("flip_sign", None)
        seconds = time.perf_counter() - t0
        out = read_status(prob, spec)
        found = out.status == SolveStatus.OPTIMAL or out.objective is not None
        flips = read_flips(self.labels, self.y) if found else None
        obj = self.sign * self.c * out.objective if out.objective is not None else None
        bound = self.sign * self.c * out.bound if out.bound is not None else None
        return MILPResult(out.status, obj, bound, flips, seconds, out.raw)


class PairwiseMILP:
    r"""Multi-class (one-vs-all) worst case of :math:`p^a_t - p^b_t` under ``budget`` flips.

    ``labels`` are class indices of the labelled nodes; ``a`` is the clean prediction of
    the target and ``b`` a rival class. The one-hot perturbed labels are shared by the
    two SVMs; relabelling to any other class makes both binary labels :math:`-1`.
    """

    def __init__(self, k_ll, labels, c: float, k_t, a: int, b: int, flippable=None, alpha_starts=None) -> None:
        labels = np.asarray(labels, dtype=np.int64)
        k_ll, _, flippable = check_inputs(k_ll, labels, c, flippable)
        self.labels_orig, self.c, self.a, self.b = labels, float(c), int(a), int(b)
        self.k_t = np.asarray(k_t, dtype=np.float64)
        m = len(labels)
        self.prob = pulp.LpProblem("pairwise", pulp.LpMinimize)
        la, lb, flips = [], [], []
        for i, lab in enumerate(labels):
            if flippable[i]:
                va = pulp.LpVariable(f"la{i}", cat=pulp.LpBinary)
                vb = pulp.LpVariable(f"lb{i}", cat=pulp.LpBinary)
                va.setInitialValue(1 if lab == a else 0)
                vb.setInitialValue(1 if lab == b else 0)
                self.prob += va + vb <= 1
                la.append(va)
                lb.append(vb)
                flips.append(1 - va if lab == a else (1 - vb if lab == b else va + vb))
            else:
                la.append(1.0 if lab == a else -1.0)
                lb.append(1.0 if lab == b else -1.0)
        self.la, self.lb = la, lb
        sa = None if alpha_starts is None else alpha_starts[0]
        sb = None if alpha_starts is None else alpha_starts[1]
        self.block_a = kkt_block(self.prob, "A", k_ll, self.c, la, sa)
        self.block_b = kkt_block(self.prob, "B", k_ll, self.c, lb, sb)
        self.margin = pulp.lpSum(
            float(self.k_t[j]) * (self.block_a["zeta"][j] - self.block_b["zeta"][j]) for j in range(m)
        )
        self._budget = BudgetConstraint(self.prob, pulp.lpSum(flips))
        self.prob.setObjective(self.margin)

    def solve(self, budget: int, spec: SolverSpec) -> MILPResult:
        """Worst-case margin ``p_a - p_b`` under at most ``budget`` relabellings."""
        self._budget.set(budget)
        t0 = time.perf_counter()
        self.prob.solve(make_solver(spec))
        seconds = time.perf_counter() - t0
        out = read_status(self.prob, spec)
        flips = None
        new_labels = None
        if out.objective is not None:
            new_labels = self.relabelled()
            flips = [int(i) for i in np.flatnonzero(new_labels != self.labels_orig)]
        obj = self.c * out.objective if out.objective is not None else None
        bound = self.c * out.bound if out.bound is not None else None
        return MILPResult(out.status, obj, bound, flips, seconds, out.raw, new_labels)

    def relabelled(self) -> np.ndarray:
        """Labels of the last solution (a third class shown as -1 when it is not a or b)."""
        out = self.labels_orig.copy()
        for i in range(len(out)):
            if isinstance(self.la[i], pulp.LpVariable):
                if self.la[i].varValue > 0.5:
                    out[i] = self.a
                elif self.lb[i].varValue > 0.5:
                    out[i] = self.b
                elif out[i] in (self.a, self.b):
                    out[i] = -1
        return out
