r"""Collective MILP: the largest number of targets one flip set of size :math:`\le k` changes.

One KKT system (:func:`stamen.certify.milp.kkt_block`) for the shared flip set, and a binary
:math:`c_t` per target with :math:`s_tp_t\le B_t(1-c_t)`, :math:`B_t = C\sum_j|K_{tj}|`
(a valid bound on :math:`|p_t|`); the objective :math:`\sum_t c_t` counts the targets
whose sign the flip set changes (a zero score counts as changed).
"""

from __future__ import annotations

import time

import numpy as np
import pulp

from stamen.certify.milp import BudgetConstraint, binary_labels, check_inputs, kkt_block, read_flips
from stamen.certify.outcome import MILPResult
from stamen.certify.solvers import SolverSpec, make_solver, read_status


class CollectiveMILP:
    """Largest number of targets whose sign one flip set of size ``<= budget`` changes.

    ``k_tl`` is ``(T, m)`` and ``signs`` the clean signs of the T targets.
    """

    def __init__(self, k_ll, y, c: float, k_tl, signs, flippable=None, alpha_start=None) -> None:
        k_ll, y, flippable = check_inputs(k_ll, y, c, flippable)
        self.y, self.c = y, float(c)
        k_tl = np.asarray(k_tl, dtype=np.float64)
        self.prob = pulp.LpProblem("collective", pulp.LpMaximize)
        self.labels, flips = binary_labels(y, flippable)
        self.block = kkt_block(self.prob, "", k_ll, self.c, self.labels, alpha_start)
        zeta = self.block["zeta"]
        self.count = []
        for t in range(k_tl.shape[0]):
            ct = pulp.LpVariable(f"c{t}", cat=pulp.LpBinary)
            ct.setInitialValue(0)
            big = float(np.abs(k_tl[t]).sum())
            score = pulp.lpSum(float(k_tl[t, j]) * zeta[j] for j in range(len(y)) if k_tl[t, j] != 0)
            self.prob += float(signs[t]) * score <= big * (1 - ct)
            self.count.append(ct)
        self._budget = BudgetConstraint(self.prob, flips)
        self.prob.setObjective(pulp.lpSum(self.count))

    def solve(self, budget: int, spec: SolverSpec) -> MILPResult:
        """Largest count of changed targets (proven when the status is ``OPTIMAL``)."""
        self._budget.set(budget)
        t0 = time.perf_counter()
        self.prob.solve(make_solver(spec))
        seconds = time.perf_counter() - t0
        out = read_status(self.prob, spec)
        flips = read_flips(self.labels, self.y) if out.objective is not None else None
        obj = None if out.objective is None else float(round(out.objective))
        bound = None if out.bound is None else float(out.bound)
        return MILPResult(out.status, obj, bound, flips, seconds, out.raw)

    def changed(self) -> list[int]:
        """Target positions counted as changed in the last solution."""
        return [t for t, ct in enumerate(self.count) if ct.varValue is not None and ct.varValue > 0.5]
