r"""Exact label-flip certificates for kernel SVMs as mixed-integer linear programs.

The adversary flips up to :math:`k` of the :math:`m` training labels
:math:`\mathbf{y}\in\{\pm1\}^m`. Because the bias-free SVM dual is a convex box QP,
its KKT conditions characterise the trained model exactly, and the bilevel attack

.. math::
    \min_{\tilde{\mathbf{y}},\,\boldsymbol\alpha}\; s_t\, p_t
    \quad\text{s.t.}\quad \lVert\tilde{\mathbf{y}}-\mathbf{y}\rVert_0\le k,\quad
    \boldsymbol\alpha \in \arg\min_{0\le\boldsymbol\alpha\le C}
        \tfrac12\boldsymbol\alpha^\top(\tilde{\mathbf{y}}\tilde{\mathbf{y}}^\top\odot\mathbf{K})
        \boldsymbol\alpha - \mathbf{1}^\top\boldsymbol\alpha

(:math:`s_t` the sign of the clean score) becomes a single-level MILP. With
:math:`\tilde y_i = 2b_i - 1` (:math:`b_i` binary) and the scaled variables
:math:`a_i = \alpha_i/C\in[0,1]`, :math:`\zeta_i = \tilde y_i a_i\in[-1,1]`:

* products with a label are linearised exactly:
  :math:`-a_i\le\zeta_i\le a_i`, :math:`\zeta_i\ge a_i - 2(1-b_i)`,
  :math:`\zeta_i\le -a_i + 2b_i`;
* the KKT stationarity uses the compact :math:`h_i = \tilde y_i (\mathbf{K}\mathbf{z})_i`
  (:math:`\mathbf{z} = C\boldsymbol\zeta`) instead of an :math:`m\times m` product
  matrix: with :math:`w_i = C\sum_j K_{ij}\zeta_j`, :math:`|w_i|\le R_i =
  C\sum_j|K_{ij}|`, :math:`|h_i - w_i|\le 2R_i(1-b_i)`, :math:`|h_i + w_i|\le 2R_ib_i`,
  and :math:`h_i - 1 = u_i - v_i`, :math:`u, v\ge 0`;
* complementarity :math:`u_i\alpha_i = 0`, :math:`v_i(C-\alpha_i) = 0` uses binaries
  :math:`s_i, t_i` and big-M values derived from the kernel (never a fixed constant):
  :math:`u_i\le M^u_i s_i`, :math:`a_i\le 1-s_i`, :math:`v_i\le M^v_i t_i`,
  :math:`a_i\ge t_i`, :math:`s_i+t_i\le1`, with
  :math:`M^u_i = \max(C\sum_j|Q_{ij}| - 1, 0)` and :math:`M^v_i = C\sum_j|Q_{ij}| + 1`
  (:math:`|Q_{ij}| = |K_{ij}|`), valid because :math:`u_i = \max(h_i-1,0)` and
  :math:`v_i = \max(1-h_i, 0)` with :math:`|h_i|\le R_i`;
* the prediction :math:`p_t = C\sum_j K_{tj}\zeta_j` is linear;
* every :math:`R_i` above is in fact :math:`H_i = \min(C\sum_j|K_{ij}|,\sqrt{CmK_{ii}})`
  (:func:`h_bounds`): by strong duality :math:`\lVert\mathbf{w}\rVert^2 =
  \sum_j\alpha_j - C\sum_j\xi_j \le Cm` for *every* label vector, so the bound
  cuts no KKT point and the MILP stays exact; for large :math:`C` it shrinks the
  big-M values from :math:`O(Cm)` to :math:`O(\sqrt{Cm})`.

:func:`certify_samplewise` and :func:`certify_collective` first decide every budget
with at most ``enumerate_limit`` flip sets by one exhaustive retraining sweep shared by
all targets (:mod:`certify.exhaustive`; ``method="auto"``), which is the same worst
case by definition and much faster for the usual 20 labelled nodes and budgets <= 3.

The SVM prediction is unique for every label vector (the primal is strictly convex),
so the MILP optimum is the exact worst-case score. Sample-wise certificates solve it
per target (optimisation version: the worst-case score; decision version: add
:math:`s_tp_t\le0` and certify on infeasibility). The collective certificate
maximises the number of targets :math:`t` with :math:`s_tp_t\le0` over one shared
flip set (binaries :math:`c_t`, :math:`s_tp_t\le B_t(1-c_t)`, :math:`B_t =
C\sum_j|K_{tj}|`). The multi-class certificate (one-vs-all SVMs) shares one-hot
perturbed labels between the predicted class :math:`a` and each rival :math:`b`:
:math:`\ell^a_i+\ell^b_i\le1`, and minimises :math:`p^a_t-p^b_t`; labels moved to a
third class make both binary labels :math:`-1`. A federated attacker that controls one
client may flip only that client's labelled nodes (``flippable``).

Only proofs count: a status is ``certified``/``not_certified`` when the solver proved
optimality (gap 0) or infeasibility, or a screening step (:mod:`certify.screening`)
proved it; a time limit yields ``unknown``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pulp

from certify import exhaustive
from certify.screening import RetrainCache, greedy_attack, stability_radius
from certify.solvers import SolverSpec, make_solver, read_status
from certify.svm import KernelSVM

CERTIFIED, NOT_CERTIFIED, UNKNOWN = "certified", "not_certified", "unknown"
METHODS = ("auto", "milp", "enumerate")
#: ``method="auto"`` sweeps all flip sets when there are at most this many (about 1.3 ms
#: per retraining for m = 20, so 20000 sets take roughly half a minute for all targets)
ENUMERATE_LIMIT = 20000


# --------------------------------------------------------------------------- model blocks
def _check_inputs(k_ll, y, c, flippable):
    k_ll = np.asarray(k_ll, dtype=np.float64)
    y = np.asarray(y)
    m = k_ll.shape[0]
    if k_ll.ndim != 2 or k_ll.shape != (m, m):
        raise ValueError(f"labelled kernel block must be square, got {k_ll.shape}")
    if y.shape != (m,):
        raise ValueError(f"need {m} labels, got shape {y.shape}")
    if not (c > 0):
        raise ValueError(f"C must be > 0, got {c}")
    if flippable is None:
        flippable = np.ones(m, dtype=bool)
    flippable = np.asarray(flippable, dtype=bool)
    if flippable.shape != (m,):
        raise ValueError(f"flippable mask must have {m} entries, got {flippable.shape}")
    return k_ll, y, flippable


TIGHT_BOUNDS = True


def h_bounds(k_ll: np.ndarray, c: float) -> np.ndarray:
    r"""Bound on :math:`|f(x_i)| = |(\mathbf{K}\mathbf{z})_i|` valid for every label vector.

    The smaller of :math:`C\sum_j|K_{ij}|` (from :math:`|z_j|\le C`) and
    :math:`\sqrt{C\,m\,K_{ii}}`: strong duality gives
    :math:`\lVert\mathbf{w}\rVert^2 = \sum_j\alpha_j - C\sum_j\xi_j \le Cm` for every
    label vector, and :math:`|f(x_i)| \le \lVert\mathbf{w}\rVert\sqrt{K_{ii}}`.
    """
    k_ll = np.asarray(k_ll, dtype=np.float64)
    m = k_ll.shape[0]
    r1 = c * np.abs(k_ll).sum(axis=1)
    r2 = np.sqrt(c * m * np.maximum(np.diag(k_ll), 0.0))
    # a hair of slack so that round-off never cuts a true solution
    return np.minimum(r1, r2 * (1.0 + 1e-9) + 1e-12)


def _kkt_block(prob, tag, k_ll, c, labels, alpha_start):
    """Add the SVM KKT system for one binary label vector; return the zeta variables.

    ``labels[i]`` is ``+1``/``-1`` (fixed label) or a binary LpVariable ``b_i`` with
    label ``2 b_i - 1``.
    """
    m = k_ll.shape[0]
    radius = h_bounds(k_ll, c) if TIGHT_BOUNDS else c * np.abs(k_ll).sum(axis=1)
    m_u = np.maximum(radius - 1.0, 0.0)
    m_v = radius + 1.0
    a = [pulp.LpVariable(f"{tag}a{i}", 0, 1) for i in range(m)]
    zeta = [pulp.LpVariable(f"{tag}z{i}", -1, 1) for i in range(m)]
    u = [pulp.LpVariable(f"{tag}u{i}", 0, float(m_u[i])) for i in range(m)]
    v = [pulp.LpVariable(f"{tag}v{i}", 0, float(m_v[i])) for i in range(m)]
    s = [pulp.LpVariable(f"{tag}s{i}", cat=pulp.LpBinary) for i in range(m)]
    t = [pulp.LpVariable(f"{tag}t{i}", cat=pulp.LpBinary) for i in range(m)]
    for i in range(m):
        w = pulp.lpSum(float(c * k_ll[i, j]) * zeta[j] for j in range(m) if k_ll[i, j] != 0.0)
        lab = labels[i]
        if isinstance(lab, pulp.LpVariable):
            prob += zeta[i] <= a[i]
            prob += zeta[i] >= -a[i]
            prob += zeta[i] >= a[i] - 2 * (1 - lab)
            prob += zeta[i] <= -a[i] + 2 * lab
            h = pulp.LpVariable(f"{tag}h{i}", -float(radius[i]), float(radius[i]))
            r2 = 2.0 * float(radius[i])
            prob += h - w <= r2 * (1 - lab)
            prob += h - w >= -r2 * (1 - lab)
            prob += h + w <= r2 * lab
            prob += h + w >= -r2 * lab
        else:
            prob += zeta[i] == float(lab) * a[i]
            h = float(lab) * w
        prob += h - 1 - u[i] + v[i] == 0
        prob += u[i] <= float(m_u[i]) * s[i]
        prob += a[i] <= 1 - s[i]
        prob += v[i] <= float(m_v[i]) * t[i]
        prob += a[i] >= t[i]
        prob += s[i] + t[i] <= 1
    block = {"a": a, "zeta": zeta, "u": u, "v": v, "s": s, "t": t, "radius": radius, "labels": labels}
    if alpha_start is not None:
        _set_block_start(block, k_ll, c, alpha_start)
    return block


def _set_block_start(block, k_ll, c, alpha):
    """Warm start from a trained SVM (alpha for the block's current labels)."""
    labels = block["labels"]
    y = np.array([(2 * round(lab.varValue) - 1) if isinstance(lab, pulp.LpVariable) else lab for lab in labels], float)
    a = np.clip(alpha / c, 0.0, 1.0)
    a[a < 1e-12] = 0.0
    a[a > 1 - 1e-12] = 1.0
    zeta = y * a
    h = y * (c * (k_ll @ zeta))
    for i in range(len(a)):
        block["a"][i].setInitialValue(a[i])
        block["zeta"][i].setInitialValue(zeta[i])
        block["u"][i].setInitialValue(max(h[i] - 1.0, 0.0) if a[i] == 0 else 0.0)
        block["v"][i].setInitialValue(max(1.0 - h[i], 0.0) if a[i] == 1 else 0.0)
        block["s"][i].setInitialValue(1 if a[i] == 0 else 0)
        block["t"][i].setInitialValue(1 if a[i] == 1 else 0)
        for var in (block["u"][i], block["v"][i]):
            var.setInitialValue(min(var.varValue, var.upBound))


def _binary_labels(y, flippable, name="b"):
    labels, flips = [], []
    for i, yi in enumerate(y):
        if flippable[i]:
            b = pulp.LpVariable(f"{name}{i}", cat=pulp.LpBinary)
            b.setInitialValue(1 if yi > 0 else 0)
            labels.append(b)
            flips.append((1 - b) if yi > 0 else b)
        else:
            labels.append(float(yi))
    return labels, pulp.lpSum(flips)


def _read_flips(labels, y) -> list[int]:
    out = []
    for i, lab in enumerate(labels):
        if isinstance(lab, pulp.LpVariable) and lab.varValue is not None:
            new = 1 if lab.varValue > 0.5 else -1
            if new != y[i]:
                out.append(i)
    return out


class _BudgetConstraint:
    """``number of flips <= budget`` whose right-hand side can be changed between solves."""

    def __init__(self, prob: pulp.LpProblem, flips: pulp.LpAffineExpression):
        self.con = flips <= 0
        prob.addConstraint(self.con, "budget")
        self.base = self.con.constant  # constant part of the flip count

    def set(self, budget: int) -> None:
        self.con.constant = self.base - float(budget)


@dataclass
class MILPResult:
    """Outcome of one MILP solve (scores are in the original, unscaled units)."""

    status: str  # optimal | infeasible | unknown
    objective: float | None  # worst-case score (sample-wise), count (collective)
    bound: float | None
    flips: list[int] | None
    seconds: float
    raw_status: str


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

    def __init__(self, k_ll, y, c, k_t, sign, flippable=None, alpha_start=None):
        k_ll, y, flippable = _check_inputs(k_ll, y, c, flippable)
        self.y, self.c, self.sign = y, float(c), float(sign)
        self.k_t = np.asarray(k_t, dtype=np.float64)
        self.prob = pulp.LpProblem("samplewise", pulp.LpMinimize)
        self.labels, flips = _binary_labels(y, flippable)
        self.block = _kkt_block(self.prob, "", k_ll, self.c, self.labels, alpha_start)
        self.score = pulp.lpSum(float(self.k_t[j]) * self.block["zeta"][j] for j in range(len(y)) if self.k_t[j] != 0)
        self._budget = _BudgetConstraint(self.prob, flips)
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
        flips = _read_flips(self.labels, self.y) if out.status == "optimal" or out.objective is not None else None
        obj = self.sign * self.c * out.objective if out.objective is not None else None
        bound = self.sign * self.c * out.bound if out.bound is not None else None
        return MILPResult(out.status, obj, bound, flips, seconds, out.raw)


class CollectiveMILP:
    """Largest number of targets whose sign one flip set of size ``<= budget`` changes.

    ``k_tl`` is ``(T, m)`` and ``signs`` the clean signs of the T targets.
    """

    def __init__(self, k_ll, y, c, k_tl, signs, flippable=None, alpha_start=None):
        k_ll, y, flippable = _check_inputs(k_ll, y, c, flippable)
        self.y, self.c = y, float(c)
        k_tl = np.asarray(k_tl, dtype=np.float64)
        self.prob = pulp.LpProblem("collective", pulp.LpMaximize)
        self.labels, flips = _binary_labels(y, flippable)
        self.block = _kkt_block(self.prob, "", k_ll, self.c, self.labels, alpha_start)
        zeta = self.block["zeta"]
        self.count = []
        for t in range(k_tl.shape[0]):
            ct = pulp.LpVariable(f"c{t}", cat=pulp.LpBinary)
            ct.setInitialValue(0)
            big = float(np.abs(k_tl[t]).sum())
            score = pulp.lpSum(float(k_tl[t, j]) * zeta[j] for j in range(len(y)) if k_tl[t, j] != 0)
            self.prob += float(signs[t]) * score <= big * (1 - ct)
            self.count.append(ct)
        self._budget = _BudgetConstraint(self.prob, flips)
        self.prob.setObjective(pulp.lpSum(self.count))

    def solve(self, budget: int, spec: SolverSpec) -> MILPResult:
        self._budget.set(budget)
        t0 = time.perf_counter()
        self.prob.solve(make_solver(spec))
        seconds = time.perf_counter() - t0
        out = read_status(self.prob, spec)
        flips = _read_flips(self.labels, self.y) if out.objective is not None else None
        obj = None if out.objective is None else float(round(out.objective))
        bound = None if out.bound is None else float(out.bound)
        return MILPResult(out.status, obj, bound, flips, seconds, out.raw)

    def changed(self) -> list[int]:
        """Target positions counted as changed in the last solution."""
        return [t for t, ct in enumerate(self.count) if ct.varValue is not None and ct.varValue > 0.5]


class PairwiseMILP:
    r"""Multi-class (one-vs-all) worst case of :math:`p^a_t - p^b_t` under ``budget`` flips.

    ``labels`` are class indices of the labelled nodes; ``a`` is the clean prediction of
    the target and ``b`` a rival class. The one-hot perturbed labels are shared by the
    two SVMs; relabelling to any other class makes both binary labels :math:`-1`.
    """

    def __init__(self, k_ll, labels, c, k_t, a, b, flippable=None, alpha_starts=None):
        labels = np.asarray(labels, dtype=np.int64)
        k_ll, _, flippable = _check_inputs(k_ll, labels, c, flippable)
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
        self.block_a = _kkt_block(self.prob, "A", k_ll, self.c, la, sa)
        self.block_b = _kkt_block(self.prob, "B", k_ll, self.c, lb, sb)
        self.margin = pulp.lpSum(
            float(self.k_t[j]) * (self.block_a["zeta"][j] - self.block_b["zeta"][j]) for j in range(m)
        )
        self._budget = _BudgetConstraint(self.prob, pulp.lpSum(flips))
        self.prob.setObjective(self.margin)

    def solve(self, budget: int, spec: SolverSpec) -> MILPResult:
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
        res = MILPResult(out.status, obj, bound, flips, seconds, out.raw)
        res.new_labels = new_labels  # type: ignore[attr-defined]
        return res

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


# --------------------------------------------------------------------------- orchestration
@dataclass
class BudgetOutcome:
    status: str
    method: str  # clean | bound | attack | milp | monotone
    worst_case_score: float | None
    bounds: tuple[float, float] | None
    flips: list[int] | None
    seconds: float
    milp: bool
    raw_status: str = ""

    def as_dict(self) -> dict:
        return {
            "status": self.status,
            "method": self.method,
            "worst_case_score": self.worst_case_score,
            "bounds": None if self.bounds is None else [float(self.bounds[0]), float(self.bounds[1])],
            "flips": self.flips,
            "seconds": self.seconds,
            "needed_milp": self.milp,
            "solver_status": self.raw_status,
        }


@dataclass
class TargetOutcome:
    position: int
    clean_score: float
    budgets: dict[int, BudgetOutcome] = field(default_factory=dict)


def certify_samplewise(
    k_ll: np.ndarray,
    k_tl: np.ndarray,
    y: np.ndarray,
    c: float,
    budgets: list[int],
    flippable: np.ndarray | None = None,
    spec: SolverSpec = SolverSpec(),
    screen: bool = True,
    decide: bool = False,
    k_tt: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
    method: str = "auto",
    enumerate_limit: int = ENUMERATE_LIMIT,
) -> list[TargetOutcome]:
    r"""Sample-wise certificates of every target row of ``k_tl`` for each budget.

    ``method``: ``auto`` (default) decides every budget whose number of flip sets
    :math:`\sum_{j\le k}\binom{m}{j}` is at most ``enumerate_limit`` by one exhaustive
    retraining sweep shared by all targets (:mod:`certify.exhaustive`; exact by
    definition) and larger budgets as below; ``enumerate`` sweeps every budget;
    ``milp`` never sweeps.

    Per target and budget (ascending): the clean sign for ``k = 0``; a stability bound
    that keeps the sign proves "certified"; a greedy attack (or a smaller budget's
    counterexample) that changes the sign proves "not certified"; otherwise the exact
    MILP decides (one model per target, re-solved for each budget). With
    ``screen=False`` every budget > 0 goes to the MILP. ``decide=True`` uses the
    decision version (no worst-case score). ``k_tt`` (the targets' kernel diagonal)
    enables the stability bound; without it only the attack screens.
    """
    k_ll, y, flippable = _check_inputs(k_ll, y, c, flippable)
    y = y.astype(np.float64)
    k_tl = np.asarray(k_tl, dtype=np.float64)
    if k_tl.ndim != 2 or k_tl.shape[1] != k_ll.shape[0]:
        raise ValueError(f"target kernel rows must have {k_ll.shape[0]} columns, got {k_tl.shape}")
    budgets = sorted({int(b) for b in budgets})
    if any(b < 0 for b in budgets):
        raise ValueError("budgets must be >= 0")
    cache = RetrainCache(k_ll, k_tl, y, c)
    clean = cache.scores(frozenset())
    results = []
    max_b = max(budgets) if budgets else 0
    k_enum = _enumerable_budget(budgets, int(flippable.sum()), method, enumerate_limit)
    sw = None
    if k_enum > 0:
        sw = exhaustive.sweep(k_ll, k_tl, y, c, k_enum, flippable, clean_alpha=cache.clean.alpha_)
        n_enum = sum(1 for b in budgets if 0 < b <= k_enum)
        enum_share = sw.seconds / max(k_tl.shape[0], 1) / max(n_enum, 1)
        enum_worst = {b: sw.upto(b) for b in budgets if 0 < b <= k_enum}
    for t in range(k_tl.shape[0]):
        sign = 1.0 if clean[t] >= 0 else -1.0
        out = TargetOutcome(t, float(clean[t]))
        attack_size, attack_flips, attack_margin = None, None, None
        model = None
        counter: BudgetOutcome | None = None
        screen_time = 0.0
        if sw is not None:
            for k in budgets:
                if not 0 < k <= k_enum:
                    continue
                w_signed, w_sets = enum_worst[k]
                st = CERTIFIED if w_signed[t] > 0 else NOT_CERTIFIED
                res = BudgetOutcome(
                    st, "enumerate", float(sign * w_signed[t]), None, sorted(w_sets[t]), enum_share, False
                )
                out.budgets[k] = res
                if st == NOT_CERTIFIED and counter is None:
                    counter = res
        if screen and max_b > k_enum and counter is None:
            ts = time.perf_counter()
            attack_size, attack_flips, attack_margin = greedy_attack(cache, t, sign, max_b, flippable)
            screen_time = time.perf_counter() - ts
        for k in budgets:
            t0 = time.perf_counter()
            if k == 0:
                st = CERTIFIED if sign * clean[t] > 0 else NOT_CERTIFIED
                out.budgets[k] = BudgetOutcome(st, "clean", float(clean[t]), None, [], 0.0, False)
                continue
            if k <= k_enum:
                continue  # decided by the sweep above
            if counter is not None:
                out.budgets[k] = BudgetOutcome(
                    NOT_CERTIFIED, "monotone", counter.worst_case_score, counter.bounds, counter.flips, 0.0, False
                )
                continue
            if screen:
                radius = _radius_for(k_ll, k_tl, t, c, k, flippable, k_tt)
                if abs(clean[t]) > radius:
                    lo, hi = clean[t] - radius, clean[t] + radius
                    out.budgets[k] = BudgetOutcome(
                        CERTIFIED,
                        "bound",
                        None,
                        (lo, hi),
                        None,
                        time.perf_counter() - t0 + screen_time / len(budgets),
                        False,
                    )
                    continue
                if attack_size is not None and attack_size <= k:
                    score = float(cache.scores(attack_flips)[t])
                    counter = BudgetOutcome(
                        NOT_CERTIFIED,
                        "attack",
                        None,
                        (-np.inf, score) if sign > 0 else (score, np.inf),
                        sorted(attack_flips),
                        time.perf_counter() - t0 + screen_time,
                        False,
                    )
                    out.budgets[k] = counter
                    continue
            if model is None:
                model = SampleWiseMILP(k_ll, y, c, k_tl[t], sign, flippable, alpha_start=cache.clean.alpha_)
            res = model.solve(k, spec, decide=decide)
            outcome = _classify_samplewise(res, sign, cache, t, decide)
            outcome.seconds = time.perf_counter() - t0 + (screen_time if screen else 0.0)
            screen_time = 0.0
            out.budgets[k] = outcome
            if outcome.status == NOT_CERTIFIED:
                counter = outcome
        results.append(out)
        if progress is not None:
            progress(1)
    return results


def _enumerable_budget(budgets, num_flippable, method, limit) -> int:
    """Largest budget decided by the exhaustive sweep (0: none)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; accepted: {', '.join(METHODS)}")
    if method == "milp":
        return 0
    positive = [b for b in budgets if b > 0]
    if method == "enumerate":
        return max(positive, default=0)
    ok = [b for b in positive if exhaustive.num_flip_sets(num_flippable, b) <= limit]
    return max(ok, default=0)


def _radius_for(k_ll, k_tl, t, c, k, flippable, k_tt):
    if k_tt is None:
        return np.inf  # without K_tt the bound is unavailable
    return float(stability_radius(np.diag(k_ll), np.array([k_tt[t]]), c, k, flippable)[0])


def _classify_samplewise(res: MILPResult, sign: float, cache: RetrainCache, t: int, decide: bool) -> BudgetOutcome:
    if res.status == "infeasible":
        if decide:
            return BudgetOutcome(CERTIFIED, "milp", None, None, None, res.seconds, True, res.raw_status)
        return BudgetOutcome(UNKNOWN, "milp", None, None, None, res.seconds, True, res.raw_status)
    if res.status == "optimal" or (res.flips is not None and res.objective is not None):
        replay = float(cache.scores(frozenset(res.flips))[t]) if res.flips is not None else None
        if replay is not None and sign * replay <= 0:
            # a concrete flip set that changes the sign: a proof whatever the solver status
            return BudgetOutcome(
                NOT_CERTIFIED,
                "milp",
                res.objective if res.status == "optimal" else replay,
                None,
                res.flips,
                res.seconds,
                True,
                res.raw_status,
            )
        if res.status == "optimal" and not decide:
            st = CERTIFIED if sign * res.objective > 0 else NOT_CERTIFIED
            return BudgetOutcome(st, "milp", res.objective, None, res.flips, res.seconds, True, res.raw_status)
        if res.status == "optimal" and decide:
            return BudgetOutcome(NOT_CERTIFIED, "milp", None, None, res.flips, res.seconds, True, res.raw_status)
    return BudgetOutcome(UNKNOWN, "milp", None, None, res.flips, res.seconds, True, res.raw_status)


def certify_multiclass(
    k_ll: np.ndarray,
    k_tl: np.ndarray,
    labels: np.ndarray,
    c: float,
    budgets: list[int],
    num_classes: int,
    flippable: np.ndarray | None = None,
    spec: SolverSpec = SolverSpec(),
    k_tt: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[TargetOutcome]:
    """Exact multi-class (one-vs-all SVM) sample-wise certificates.

    The target's clean prediction ``a`` is certified for budget ``k`` iff for every rival
    ``b`` the worst-case ``p_a - p_b`` over relabellings of at most ``k`` nodes stays
    positive. Rivals whose clean margin exceeds twice the stability radius (each class
    score moves at most one radius) are skipped; the rest are solved by
    :class:`PairwiseMILP`. ``clean_score`` is the smallest clean margin and
    ``worst_case_score`` the smallest worst-case margin over the rivals.
    """
    from certify.svm import OneVsAllSVM

    labels = np.asarray(labels, dtype=np.int64)
    k_ll, _, flippable = _check_inputs(k_ll, labels, c, flippable)
    k_tl = np.asarray(k_tl, dtype=np.float64)
    model = OneVsAllSVM(c).fit(k_ll, labels, num_classes)
    scores = model.decision_function(k_tl)
    budgets = sorted({int(b) for b in budgets})
    results = []
    for t in range(k_tl.shape[0]):
        a = int(np.argmax(scores[t]))
        margins = scores[t, a] - scores[t]
        margins[a] = np.inf
        out = TargetOutcome(t, float(np.min(margins)))
        counter = None
        models: dict[int, PairwiseMILP] = {}
        for k in budgets:
            t0 = time.perf_counter()
            if k == 0:
                st = CERTIFIED if np.min(margins) > 0 else NOT_CERTIFIED
                out.budgets[k] = BudgetOutcome(st, "clean", float(np.min(margins)), None, [], 0.0, False)
                continue
            if counter is not None:
                out.budgets[k] = BudgetOutcome(
                    NOT_CERTIFIED, "monotone", counter.worst_case_score, None, counter.flips, 0.0, False
                )
                continue
            radius = np.inf
            if k_tt is not None:
                radius = float(stability_radius(np.diag(k_ll), np.array([k_tt[t]]), c, k, flippable)[0])
            worst, status, used_milp, flips, raw = np.inf, CERTIFIED, False, None, ""
            for b in range(num_classes):
                if b == a or margins[b] > 2 * radius:
                    continue
                if b not in models:
                    models[b] = PairwiseMILP(
                        k_ll,
                        labels,
                        c,
                        k_tl[t],
                        a,
                        b,
                        flippable,
                        alpha_starts=(model.models_[a].alpha_, model.models_[b].alpha_),
                    )
                res = models[b].solve(k, spec)
                used_milp = True
                raw = res.raw_status
                if res.status != "optimal":
                    status = UNKNOWN if status == CERTIFIED else status
                    continue
                if res.objective < worst:
                    worst, flips = res.objective, res.flips
                if res.objective <= 0:
                    status = NOT_CERTIFIED
                    break
            method = "milp" if used_milp else "bound"
            w = worst if (used_milp and np.isfinite(worst)) else None
            out.budgets[k] = BudgetOutcome(status, method, w, None, flips, time.perf_counter() - t0, used_milp, raw)
            if status == NOT_CERTIFIED:
                counter = out.budgets[k]
        results.append(out)
        if progress is not None:
            progress(1)
    return results


def certify_collective(
    k_ll: np.ndarray,
    k_tl: np.ndarray,
    y: np.ndarray,
    c: float,
    budgets: list[int],
    flippable: np.ndarray | None = None,
    spec: SolverSpec = SolverSpec(),
    k_tt: np.ndarray | None = None,
    method: str = "auto",
    enumerate_limit: int = ENUMERATE_LIMIT,
) -> dict[int, dict]:
    """Collective certificate: per budget, the largest number of targets one flip set changes.

    ``method`` as in :func:`certify_samplewise`: budgets with at most
    ``enumerate_limit`` flip sets are decided exactly by one exhaustive sweep.

    Targets certified individually by the stability bound cannot change and are left
    out of the MILP. Returns per budget: ``status`` (optimal/unknown), ``max_changed``
    (proven optimum, or ``None``), ``changed_upper_bound`` (proven bound on the
    optimum), ``certified_lower_bound`` = T - that bound, ``flips``, ``seconds``.
    """
    k_ll, y, flippable = _check_inputs(k_ll, y, c, flippable)
    k_tl = np.asarray(k_tl, dtype=np.float64)
    svm = KernelSVM(c).fit(k_ll, y)
    clean = k_tl @ svm.dual_coef_
    signs = np.where(clean >= 0, 1.0, -1.0)
    n_t = len(clean)
    out = {}
    budgets = sorted({int(b) for b in budgets})
    k_enum = _enumerable_budget(budgets, int(flippable.sum()), method, enumerate_limit)
    sw = None
    if k_enum > 0:
        sw = exhaustive.sweep(k_ll, k_tl, y, c, k_enum, flippable, clean_alpha=svm.alpha_)
    for k in budgets:
        t0 = time.perf_counter()
        if 0 < k <= k_enum:
            changed, flips = sw.collective_upto(k)
            out[k] = {
                "status": "optimal",
                "method": "enumerate",
                "max_changed": changed,
                "changed_upper_bound": changed,
                "certified_lower_bound": n_t - changed,
                "flips": sorted(flips),
                "seconds": sw.seconds,
                "milp_targets": 0,
                "flip_sets": exhaustive.num_flip_sets(int(flippable.sum()), k),
            }
            continue
        if k == 0:
            changed = int(np.sum(signs * clean <= 0))
            out[k] = {
                "status": "optimal",
                "max_changed": changed,
                "changed_upper_bound": changed,
                "certified_lower_bound": n_t - changed,
                "flips": [],
                "seconds": 0.0,
                "milp_targets": 0,
            }
            continue
        keep = np.ones(n_t, dtype=bool)
        if k_tt is not None:
            radius = stability_radius(np.diag(k_ll), k_tt, c, k, flippable)
            keep = np.abs(clean) <= radius
        if not keep.any():
            out[k] = {
                "status": "optimal",
                "max_changed": 0,
                "changed_upper_bound": 0,
                "certified_lower_bound": n_t,
                "flips": [],
                "seconds": time.perf_counter() - t0,
                "milp_targets": 0,
            }
            continue
        model = CollectiveMILP(k_ll, y, c, k_tl[keep], signs[keep], flippable, alpha_start=svm.alpha_)
        res = model.solve(k, spec)
        if res.status == "optimal":
            upper = res.objective
        else:
            upper = float(np.floor(res.bound + 1e-6)) if res.bound is not None else float(keep.sum())
        out[k] = {
            "status": res.status,
            "max_changed": int(res.objective) if res.status == "optimal" else None,
            "best_found": None if res.objective is None else int(res.objective),
            "changed_upper_bound": int(upper),
            "certified_lower_bound": int(n_t - upper),
            "flips": res.flips,
            "seconds": time.perf_counter() - t0,
            "milp_targets": int(keep.sum()),
            "solver_status": res.raw_status,
        }
    return out
