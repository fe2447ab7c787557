r"""The multi-class (one-vs-all SVM) cascade: each target and budget by the cheapest sound step.

The clean prediction :math:`a` of a target is certified for budget :math:`k` iff for every
rival :math:`b` the worst-case :math:`p_a - p_b` over relabellings of at most :math:`k`
labelled nodes stays positive (:mod:`stamen.certify.relabel`). Per target and budget (ascending):

1. ``k = 0``: the clean margin;
2. a smaller budget's counterexample proves "not certified" (a relabelling of size
   :math:`\le k` is one of size :math:`\le k'` for every :math:`k' > k`);
3. the **sweep** (:func:`stamen.certify.relabel.sweep`, shared by all targets and run once before
   them): every budget with at most ``enumerate_limit`` relabellings
   :math:`\sum_{j\le k}\binom{m}{j}(c-1)^j` (``method="auto"``; ``"enumerate"``: every
   budget; ``"milp"``: none) is decided by retraining on all of them: the MILP's worst
   case by definition (both answers, with a minimising relabelling);
4. the **stability bound** (:func:`stamen.certify.screening.stability_radius`): each class score
   moves at most one radius, so rivals with a clean margin above twice the radius cannot
   overtake; when none is left the target is certified;
5. a **greedy attack** (:func:`stamen.certify.relabel.greedy`, once per target up to the largest
   budget) whose relabelling of size :math:`\le k` gives a margin :math:`\le 0` after a
   fresh retraining of every one-vs-all SVM (:func:`stamen.certify.relabel.verified_margin`)
   proves "not certified";
6. otherwise :class:`stamen.certify.milp_sample.PairwiseMILP` per remaining rival (stopping at the
   first rival whose worst case is :math:`\le 0`); a solver limit leaves ``UNKNOWN``.

``screen=False`` skips 4 and 5 (every rival goes to the MILP). Each target is decided by
:func:`decide_target` from a :class:`MulticlassContext` alone, so targets run on any number
of worker processes (:mod:`stamen.certify.parallel`) with the same answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import numpy as np

from stamen.certify.milp import check_inputs
from stamen.certify.milp_sample import PairwiseMILP
from stamen.certify.outcome import BudgetOutcome, Method, SolveStatus, Status, TargetOutcome
from stamen.certify.parallel import decide_in_order
from stamen.certify.registry import ENUMERATE_LIMIT, METHODS
from stamen.certify.relabel import RelabelCache, SweepResult, greedy, num_relabellings, sweep, verified_margin
from stamen.certify.screening import stability_radius
from stamen.certify.solvers import SolverSpec

CERTIFIED, NOT_CERTIFIED, UNKNOWN = Status.CERTIFIED, Status.NOT_CERTIFIED, Status.UNKNOWN


@dataclass
class MulticlassContext:
    """Everything :func:`decide_target` reads: the same for every target, read-only."""

    k_ll: np.ndarray
    k_tl: np.ndarray
    labels: np.ndarray
    c: float
    budgets: list[int]
    num_classes: int
    flippable: np.ndarray
    spec: SolverSpec
    k_tt: np.ndarray | None
    screen: bool
    scores: np.ndarray  # (T, classes) clean one-vs-all scores
    alphas: np.ndarray  # (classes, m) clean duals (MILP warm starts)
    k_enum: int = 0  # largest budget decided by the sweep
    swept: SweepResult | None = None
    sweep_row: dict[int, int] = field(default_factory=dict)  # target position -> row of the sweep
    sweep_share: float = 0.0  # the sweep's seconds per target and swept budget
    _cache: RelabelCache | None = field(default=None, repr=False)

    def cache(self) -> RelabelCache:
        """This process's retraining cache (built on first use; never pickled)."""
        if self._cache is None:
            self._cache = RelabelCache(self.k_ll, self.k_tl, self.labels, self.c, self.num_classes)
        return self._cache

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_cache"] = None
        return state


def enumerable_budget(budgets: list[int], num_flippable: int, num_classes: int, method: str, limit: int) -> int:
    """Largest budget decided by the relabelling sweep (0: none)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; accepted: {', '.join(METHODS)}")
    positive = [b for b in budgets if b > 0]
    if method == "milp":
        return 0
    if method == "enumerate":
        return max(positive, default=0)
    return max((b for b in positive if num_relabellings(num_flippable, b, num_classes) <= limit), default=0)


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
    on_target: Callable[[TargetOutcome], None] | None = None,
    skip: Collection[int] = (),
    screen: bool = True,
    method: str = "auto",
    enumerate_limit: int = ENUMERATE_LIMIT,
    workers: int = 1,
) -> list[TargetOutcome]:
    """Exact multi-class (one-vs-all SVM) sample-wise certificates (see the module docstring).

    ``clean_score`` is the smallest clean margin; ``worst_case_score`` the smallest worst-case
    margin found (sweep: over all relabellings; MILP: over the rivals it solved).
    ``on_target`` hears each target as it is decided (in this process, in completion order);
    the rows in ``skip`` are left out. ``workers`` processes decide the targets; the result,
    in target order, is the same for every ``workers``.
    """
    labels = np.asarray(labels, dtype=np.int64)
    k_ll, _, flippable = check_inputs(k_ll, labels, c, flippable)
    k_tl = np.asarray(k_tl, dtype=np.float64)
    budgets = sorted({int(b) for b in budgets})
    cache = RelabelCache(k_ll, k_tl, labels, c, num_classes)
    ctx = MulticlassContext(
        k_ll,
        k_tl,
        labels,
        float(c),
        budgets,
        int(num_classes),
        flippable,
        spec,
        None if k_tt is None else np.asarray(k_tt, dtype=np.float64),
        screen,
        cache.clean.decision_function(k_tl),
        np.stack([model.alpha_ for model in cache.clean.models_]),
        _cache=cache,
    )
    pending = [t for t in range(k_tl.shape[0]) if t not in skip]
    ctx.k_enum = enumerable_budget(budgets, int(flippable.sum()), num_classes, method, enumerate_limit)
    if ctx.k_enum > 0 and pending:
        ctx.swept = sweep(cache, np.array(pending), ctx.k_enum, flippable)
        ctx.sweep_row = {t: r for r, t in enumerate(pending)}
        swept_budgets = sum(1 for b in budgets if 0 < b <= ctx.k_enum)
        ctx.sweep_share = ctx.swept.seconds / len(pending) / max(swept_budgets, 1)
    return decide_in_order(decide_target, ctx, pending, workers, on_target, progress)


def decide_target(ctx: MulticlassContext, t: int) -> TargetOutcome:
    """All budgets of target row ``t`` (a function of ``ctx`` and ``t`` alone)."""
    scores = ctx.scores[t]
    a = int(np.argmax(scores))
    margins = scores[a] - scores
    margins[a] = np.inf
    out = TargetOutcome(t, float(np.min(margins)))
    counter: BudgetOutcome | None = None
    attack: tuple[int | None, tuple, float] | None = None
    models: dict[int, PairwiseMILP] = {}
    for k in ctx.budgets:
        t0 = time.perf_counter()
        if k == 0:
            st = CERTIFIED if np.min(margins) > 0 else NOT_CERTIFIED
            out.budgets[k] = BudgetOutcome(st, Method.CLEAN, float(np.min(margins)), None, [], 0.0, False)
            continue
        if counter is not None:
            out.budgets[k] = BudgetOutcome(
                NOT_CERTIFIED,
                Method.MONOTONE,
                counter.worst_case_score,
                counter.bounds,
                counter.flips,
                0.0,
                False,
                relabel=counter.relabel,
            )
            continue
        if k <= ctx.k_enum and ctx.swept is not None:
            row = ctx.sweep_row[t]
            worst, relabel = float(ctx.swept.worst[k][row]), ctx.swept.argmin[k][row]
            st = CERTIFIED if worst > 0 else NOT_CERTIFIED
            flips = sorted(i for i, _ in relabel)
            out.budgets[k] = BudgetOutcome(
                st, Method.ENUMERATE, worst, None, flips, ctx.sweep_share, False, relabel=dict(relabel)
            )
            if st == NOT_CERTIFIED:
                counter = out.budgets[k]
            continue
        radius = np.inf
        if ctx.screen and ctx.k_tt is not None:
            radius = float(stability_radius(np.diag(ctx.k_ll), ctx.k_tt[t : t + 1], ctx.c, k, ctx.flippable)[0])
        rivals = [b for b in range(ctx.num_classes) if b != a and not margins[b] > 2 * radius]
        if ctx.screen and rivals:
            if attack is None:
                attack = _attack(ctx, t, a)
            size, relabel, margin = attack
            if size is not None and size <= k:
                counter = BudgetOutcome(
                    NOT_CERTIFIED,
                    Method.ATTACK,
                    None,
                    (-np.inf, margin),
                    sorted(i for i, _ in relabel),
                    time.perf_counter() - t0,
                    False,
                    relabel=dict(relabel),
                )
                out.budgets[k] = counter
                continue
        out.budgets[k] = _milp(ctx, t, a, k, rivals, models, t0)
        if out.budgets[k].status == NOT_CERTIFIED:
            counter = out.budgets[k]
    return out


def _attack(ctx: MulticlassContext, t: int, a: int) -> tuple[int | None, tuple, float]:
    """The greedy relabelling up to the largest budget; a counterexample only if a fresh retraining confirms it."""
    size, relabel, _ = greedy(ctx.cache(), t, a, max(ctx.budgets), ctx.flippable)
    if size is None:
        return None, relabel, np.inf
    margin = verified_margin(ctx.k_ll, ctx.k_tl[t], ctx.labels, ctx.c, ctx.num_classes, a, relabel)
    return (size, relabel, margin) if margin <= 0 else (None, relabel, np.inf)


def _milp(
    ctx: MulticlassContext, t: int, a: int, k: int, rivals: list[int], models: dict[int, PairwiseMILP], t0: float
) -> BudgetOutcome:
    """The pairwise MILPs of the remaining rivals (none left: certified by the bound)."""
    worst, status, used_milp, flips, raw = np.inf, CERTIFIED, False, None, ""
    for b in rivals:
        if b not in models:
            models[b] = PairwiseMILP(
                ctx.k_ll,
                ctx.labels,
                ctx.c,
                ctx.k_tl[t],
                a,
                b,
                ctx.flippable,
                alpha_starts=(ctx.alphas[a], ctx.alphas[b]),
            )
        res = models[b].solve(k, ctx.spec)
        used_milp = True
        raw = res.raw_status
        if res.status != SolveStatus.OPTIMAL:
            status = UNKNOWN if status == CERTIFIED else status
            continue
        if res.objective < worst:
            worst, flips = res.objective, res.flips
        if res.objective <= 0:
            status = NOT_CERTIFIED
            break
    method = Method.MILP if used_milp else Method.BOUND
    w = worst if (used_milp and np.isfinite(worst)) else None
    return BudgetOutcome(status, method, w, None, flips, time.perf_counter() - t0, used_milp, raw)
