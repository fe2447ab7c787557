r"""The screening cascade: decide each target and budget by the cheapest sound step.

Sample-wise, per target and budget (ascending):

1. ``k = 0``: the clean sign (a zero score counts as the positive class and is not
   certified).
2. the **exhaustive sweep** (:mod:`stamen.certify.exhaustive`): every budget with at most
   ``enumerate_limit`` flip sets (``method="auto"``; ``"enumerate"``: every budget;
   ``"milp"``: none) is decided by retraining on every flip set once, shared by all
   targets; the same worst case as the MILP by definition;
3. a smaller budget's counterexample proves "not certified" (monotone in the budget);
4. the **stability bound** (:func:`stamen.certify.screening.stability_radius`) proves
   "certified" when the clean score exceeds the largest possible change;
5. a **greedy attack** (:func:`stamen.certify.screening.greedy_attack`) with a flip set of size
   :math:`\le k` that changes the sign, confirmed by a fresh retraining on the flipped
   labels, proves "not certified";
6. otherwise the exact MILP (:class:`stamen.certify.milp_sample.SampleWiseMILP`, one model per
   target re-solved for every budget) decides; a solver limit leaves ``UNKNOWN``, except
   that a feasible flip set whose exact retraining changes the sign is a proof.

``screen=False`` skips 4 and 5. Several classes (one-vs-all SVMs) have their own cascade,
:mod:`stamen.certify.cascade_multiclass`. :func:`certify_collective`
sweeps what it can, leaves targets certified by the bound out of the MILP and solves
:class:`stamen.certify.milp_collective.CollectiveMILP`. The statuses are those of
:mod:`stamen.certify.outcome`: only proofs count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import numpy as np

from stamen.certify import exhaustive
from stamen.certify.milp import check_inputs
from stamen.certify.milp_collective import CollectiveMILP
from stamen.certify.milp_sample import SampleWiseMILP
from stamen.certify.outcome import (
    BudgetOutcome,
    CollectiveOutcome,
    Method,
    MILPResult,
    SolveStatus,
    Status,
    TargetOutcome,
)
from stamen.certify.parallel import decide_in_order
from stamen.certify.registry import ENUMERATE_LIMIT, METHODS
from stamen.certify.screening import RetrainCache, greedy_attack, stability_radius
from stamen.certify.solvers import SolverSpec
from stamen.certify.svm import KernelSVM

CERTIFIED, NOT_CERTIFIED, UNKNOWN = Status.CERTIFIED, Status.NOT_CERTIFIED, Status.UNKNOWN


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
    on_target: Callable[[TargetOutcome], None] | None = None,
    skip: Collection[int] = (),
    workers: int = 1,
) -> list[TargetOutcome]:
    r"""Sample-wise certificates of every target row of ``k_tl`` for each budget.

    ``method``: ``auto`` (default) decides every budget whose number of flip sets
    :math:`\sum_{j\le k}\binom{m}{j}` is at most ``enumerate_limit`` by one exhaustive
    retraining sweep shared by all targets (:mod:`stamen.certify.exhaustive`; exact by
    definition) and larger budgets as below; ``enumerate`` sweeps every budget;
    ``milp`` never sweeps.

    Per target and budget (ascending): the clean sign for ``k = 0``; a stability bound
    that keeps the sign proves "certified"; a greedy attack (or a smaller budget's
    counterexample) that changes the sign proves "not certified"; otherwise the exact
    MILP decides (one model per target, re-solved for each budget). With
    ``screen=False`` every budget > 0 goes to the MILP. ``decide=True`` uses the
    decision version (no worst-case score). ``k_tt`` (the targets' kernel diagonal)
    enables the stability bound; without it only the attack screens.

    ``on_target(outcome)`` is called as each target is decided (all its budgets), before
    the next one starts: a long job keeps its finished targets (:mod:`stamen.certify.journal`).
    The rows in ``skip`` (decided earlier) are left out of the result. A target's outcome
    depends on no other target, so it is the same whichever others are skipped (apart
    from timings); the arrays stay whole, so even the rounding is the same. ``workers``
    processes decide the targets (:mod:`stamen.certify.parallel`; ``on_target`` hears them in this
    process, in completion order); the result, in target order, is the same for every
    ``workers``.
    """
    k_ll, y, flippable = check_inputs(k_ll, y, c, flippable)
    y = y.astype(np.float64)
    k_tl = np.asarray(k_tl, dtype=np.float64)
    if k_tl.ndim != 2 or k_tl.shape[1] != k_ll.shape[0]:
        raise ValueError(f"target kernel rows must have {k_ll.shape[0]} columns, got {k_tl.shape}")
    budgets = sorted({int(b) for b in budgets})
    if any(b < 0 for b in budgets):
        raise ValueError("budgets must be >= 0")
    cache = RetrainCache(k_ll, k_tl, y, c)
    ctx = BinaryContext(k_ll, k_tl, y, float(c), budgets, flippable, spec, screen, decide, k_tt, cache)
    ctx.k_enum = _enumerable_budget(budgets, int(flippable.sum()), method, enumerate_limit)
    if ctx.k_enum > 0:
        sw = exhaustive.sweep(k_ll, k_tl, y, c, ctx.k_enum, flippable, clean_alpha=cache.clean.alpha_)
        n_enum = sum(1 for b in budgets if 0 < b <= ctx.k_enum)
        ctx.enum_share = sw.seconds / max(k_tl.shape[0], 1) / max(n_enum, 1)
        ctx.enum_worst = {b: sw.upto(b) for b in budgets if 0 < b <= ctx.k_enum}
    pending = [t for t in range(k_tl.shape[0]) if t not in skip]
    return decide_in_order(decide_target, ctx, pending, workers, on_target, progress)


@dataclass
class BinaryContext:
    """Everything :func:`decide_target` reads: the same for every target, read-only (the cache memoises)."""

    k_ll: np.ndarray
    k_tl: np.ndarray
    y: np.ndarray
    c: float
    budgets: list[int]
    flippable: np.ndarray
    spec: SolverSpec
    screen: bool
    decide: bool
    k_tt: np.ndarray | None
    cache: RetrainCache
    k_enum: int = 0  # largest budget decided by the exhaustive sweep
    enum_worst: dict[int, tuple[np.ndarray, list]] = field(default_factory=dict)  # budget -> (worst, sets)
    enum_share: float = 0.0  # the sweep's seconds per target and swept budget


def decide_target(ctx: BinaryContext, t: int) -> TargetOutcome:
    """All budgets of target row ``t`` (a function of ``ctx`` and ``t`` alone)."""
    cache, budgets, k_enum = ctx.cache, ctx.budgets, ctx.k_enum
    clean = cache.scores(frozenset())
    max_b = max(budgets) if budgets else 0
    sign = 1.0 if clean[t] >= 0 else -1.0
    out = TargetOutcome(t, float(clean[t]))
    attack_size, attack_flips = None, None
    model = None
    counter: BudgetOutcome | None = None
    screen_time = 0.0
    for k in budgets:
        if not 0 < k <= k_enum:
            continue
        w_signed, w_sets = ctx.enum_worst[k]
        st = CERTIFIED if w_signed[t] > 0 else NOT_CERTIFIED
        res = BudgetOutcome(
            st, Method.ENUMERATE, float(sign * w_signed[t]), None, sorted(w_sets[t]), ctx.enum_share, False
        )
        out.budgets[k] = res
        if st == NOT_CERTIFIED and counter is None:
            counter = res
    if ctx.screen and max_b > k_enum and counter is None:
        ts = time.perf_counter()
        attack_size, attack_flips, attack_score = _verified_attack(ctx, t, sign, max_b)
        screen_time = time.perf_counter() - ts
    for k in budgets:
        t0 = time.perf_counter()
        if k == 0:
            st = CERTIFIED if sign * clean[t] > 0 else NOT_CERTIFIED
            out.budgets[k] = BudgetOutcome(st, Method.CLEAN, float(clean[t]), None, [], 0.0, False)
            continue
        if k <= k_enum:
            continue  # decided by the sweep above
        if counter is not None:
            out.budgets[k] = BudgetOutcome(
                NOT_CERTIFIED, Method.MONOTONE, counter.worst_case_score, counter.bounds, counter.flips, 0.0, False
            )
            continue
        if ctx.screen:
            radius = _radius_for(ctx.k_ll, ctx.k_tl, t, ctx.c, k, ctx.flippable, ctx.k_tt)
            if abs(clean[t]) > radius:
                lo, hi = clean[t] - radius, clean[t] + radius
                out.budgets[k] = BudgetOutcome(
                    CERTIFIED,
                    Method.BOUND,
                    None,
                    (lo, hi),
                    None,
                    time.perf_counter() - t0 + screen_time / len(budgets),
                    False,
                )
                continue
            if attack_size is not None and attack_size <= k:
                counter = BudgetOutcome(
                    NOT_CERTIFIED,
                    Method.ATTACK,
                    None,
                    (-np.inf, attack_score) if sign > 0 else (attack_score, np.inf),
                    sorted(attack_flips),
                    time.perf_counter() - t0 + screen_time,
                    False,
                )
                out.budgets[k] = counter
                continue
        if model is None:
            model = SampleWiseMILP(
                ctx.k_ll, ctx.y, ctx.c, ctx.k_tl[t], sign, ctx.flippable, alpha_start=cache.clean.alpha_
            )
        res = model.solve(k, ctx.spec, decide=ctx.decide)
        outcome = _classify_samplewise(res, sign, cache, t, ctx.decide)
        outcome.seconds = time.perf_counter() - t0 + (screen_time if ctx.screen else 0.0)
        screen_time = 0.0
        out.budgets[k] = outcome
        if outcome.status == NOT_CERTIFIED:
            counter = outcome
    return out


def _verified_attack(ctx: BinaryContext, t: int, sign: float, max_b: int) -> tuple[int | None, frozenset, float]:
    """The greedy attack; its flip set counts only when a fresh (cold-started) retraining flips the sign too."""
    size, flips, _ = greedy_attack(ctx.cache, t, sign, max_b, ctx.flippable)
    if size is None:
        return None, flips, np.nan
    y = ctx.y.copy()
    y[list(flips)] *= -1.0
    score = float(ctx.k_tl[t] @ KernelSVM(ctx.c).fit(ctx.k_ll, y).dual_coef_)
    return (size, flips, score) if sign * score <= 0 else (None, flips, np.nan)


def _enumerable_budget(budgets: list[int], num_flippable: int, method: str, limit: int) -> int:
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


def _radius_for(
    k_ll: np.ndarray, k_tl: np.ndarray, t: int, c: float, k: int, flippable: np.ndarray, k_tt: np.ndarray | None
) -> float:
    """Stability radius of target ``t`` at budget ``k`` (infinite without ``k_tt``)."""
    if k_tt is None:
        return np.inf  # without K_tt the bound is unavailable
    return float(stability_radius(np.diag(k_ll), np.array([k_tt[t]]), c, k, flippable)[0])


def _classify_samplewise(res: MILPResult, sign: float, cache: RetrainCache, t: int, decide: bool) -> BudgetOutcome:
    """Turn a MILP result into a proven status (a replayed counterexample counts whatever the solver said)."""
    if res.status == SolveStatus.INFEASIBLE:
        if decide:
            return BudgetOutcome(CERTIFIED, Method.MILP, None, None, None, res.seconds, True, res.raw_status)
        return BudgetOutcome(UNKNOWN, Method.MILP, None, None, None, res.seconds, True, res.raw_status)
    if res.status == SolveStatus.OPTIMAL or (res.flips is not None and res.objective is not None):
        replay = float(cache.scores(frozenset(res.flips))[t]) if res.flips is not None else None
        if replay is not None and sign * replay <= 0:
            # a concrete flip set that changes the sign: a proof whatever the solver status
            return BudgetOutcome(
                NOT_CERTIFIED,
                Method.MILP,
                res.objective if res.status == SolveStatus.OPTIMAL else replay,
                None,
                res.flips,
                res.seconds,
                True,
                res.raw_status,
            )
        if res.status == SolveStatus.OPTIMAL and not decide:
            st = CERTIFIED if sign * res.objective > 0 else NOT_CERTIFIED
            return BudgetOutcome(st, Method.MILP, res.objective, None, res.flips, res.seconds, True, res.raw_status)
        if res.status == SolveStatus.OPTIMAL and decide:
            return BudgetOutcome(NOT_CERTIFIED, Method.MILP, None, None, res.flips, res.seconds, True, res.raw_status)
    return BudgetOutcome(UNKNOWN, Method.MILP, None, None, res.flips, res.seconds, True, res.raw_status)


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
    on_budget: Callable[[int, CollectiveOutcome], None] | None = None,
) -> dict[int, CollectiveOutcome]:
    """Collective certificate: per budget, the largest number of targets one flip set changes.

    ``method`` as in :func:`certify_samplewise`: budgets with at most
    ``enumerate_limit`` flip sets are decided exactly by one exhaustive sweep.
    Targets certified individually by the stability bound cannot change and are left
    out of the MILP. A MILP stopped by its limit reports its proven upper bound on the
    count (``status`` ``UNKNOWN``, ``max_changed`` ``None``). ``on_budget(k, outcome)`` is
    called as each budget is decided; a budget's outcome depends on no other budget, so
    certifying a subset of the budgets gives theirs (apart from timings).
    """
    k_ll, y, flippable = check_inputs(k_ll, y, c, flippable)
    k_tl = np.asarray(k_tl, dtype=np.float64)
    svm = KernelSVM(c).fit(k_ll, y)
    clean = k_tl @ svm.dual_coef_
    signs = np.where(clean >= 0, 1.0, -1.0)
    n_t = len(clean)
    out: dict[int, CollectiveOutcome] = {}
    budgets = sorted({int(b) for b in budgets})
    k_enum = _enumerable_budget(budgets, int(flippable.sum()), method, enumerate_limit)
    sw = None
    if k_enum > 0:
        sw = exhaustive.sweep(k_ll, k_tl, y, c, k_enum, flippable, clean_alpha=svm.alpha_)

    def decide(k: int) -> CollectiveOutcome:
        t0 = time.perf_counter()
        if 0 < k <= k_enum:
            changed, flips = sw.collective_upto(k)
            return CollectiveOutcome(
                SolveStatus.OPTIMAL,
                Method.ENUMERATE,
                changed,
                changed,
                n_t - changed,
                sorted(flips),
                sw.seconds,
                best_found=changed,
                flip_sets=exhaustive.num_flip_sets(int(flippable.sum()), k),
            )
        if k == 0:
            changed = int(np.sum(signs * clean <= 0))
            return CollectiveOutcome(
                SolveStatus.OPTIMAL, Method.CLEAN, changed, changed, n_t - changed, [], 0.0, best_found=changed
            )
        keep = np.ones(n_t, dtype=bool)
        if k_tt is not None:
            radius = stability_radius(np.diag(k_ll), k_tt, c, k, flippable)
            keep = np.abs(clean) <= radius
        if not keep.any():
            return CollectiveOutcome(
                SolveStatus.OPTIMAL, Method.BOUND, 0, 0, n_t, [], time.perf_counter() - t0, best_found=0
            )
        model = CollectiveMILP(k_ll, y, c, k_tl[keep], signs[keep], flippable, alpha_start=svm.alpha_)
        res = model.solve(k, spec)
        proven = res.status == SolveStatus.OPTIMAL
        if proven:
            upper = res.objective
        else:
            upper = float(np.floor(res.bound + 1e-6)) if res.bound is not None else float(keep.sum())
        return CollectiveOutcome(
            SolveStatus.OPTIMAL if proven else SolveStatus.UNKNOWN,
            Method.MILP,
            int(res.objective) if proven else None,
            int(upper),
            int(n_t - upper),
            res.flips,
            time.perf_counter() - t0,
            best_found=None if res.objective is None else int(res.objective),
            milp_targets=int(keep.sum()),
            solver_status=res.raw_status,
        )

    for k in budgets:
        out[k] = decide(k)
        if on_budget is not None:
            on_budget(k, out[k])
    return out
