"""Certificate model ``krr``: kernel ridge regression, whose certificates need no MILP.

KRR is linear in the training labels (:mod:`stamen.certify.krr`), so the sample-wise worst
case is exact in closed form (``method`` ``exact``, binary and several classes) and the
collective count is a small MILP over the flips (:func:`stamen.certify.krr.collective_binary`).
Binary status: certified iff the worst-case score keeps the clean sign and is not zero;
several classes: iff every rival's worst-case margin stays positive.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence

import numpy as np

from stamen.certify import krr
from stamen.certify.outcome import BudgetOutcome, CollectiveOutcome, Method, SolveStatus, Status, TargetOutcome
from stamen.certify.task import CertificationTask, CleanFit, KernelBlocks


def _weights(blocks: KernelBlocks, task: CertificationTask) -> np.ndarray:
    return krr.krr_weights(blocks.k_ll, blocks.k_tl, task.ridge)


def fit(blocks: KernelBlocks, task: CertificationTask) -> CleanFit:
    """Clean KRR predictions (no C: ``ridge`` is the model's only hyper-parameter)."""
    weights = _weights(blocks, task)
    if task.binary:
        predicted = np.where(weights @ blocks.y_l >= 0, 0, 1)
    else:
        predicted, _ = krr.worst_case_multiclass(weights, blocks.y_l, task.instance.num_classes, 0)
    return CleanFit(None, task.ridge, predicted)


def samplewise(
    blocks: KernelBlocks,
    task: CertificationTask,
    fit: CleanFit,
    done: Callable[[TargetOutcome], None],
    skip: Collection[int] = (),
) -> list[TargetOutcome]:
    """Exact worst case of every target at every budget but those in ``skip``.

    All targets are decided at once (in closed form, cheap), so ``done`` hears them at the end.
    """
    weights = _weights(blocks, task)
    num_targets = len(blocks.y_t)
    if task.binary:
        clean = weights @ blocks.y_l
    else:
        _, margins0 = krr.worst_case_multiclass(weights, blocks.y_l, task.instance.num_classes, 0)
        clean = np.nanmin(margins0, axis=1)
    outs = [TargetOutcome(i, float(clean[i])) for i in range(num_targets)]
    for k in task.budgets:
        t0 = time.perf_counter()
        if task.binary:
            _, worst, flips = krr.worst_case_binary(weights, blocks.y_l, k)
            status = [
                Status.CERTIFIED if np.sign(w) == np.sign(c) and w != 0 else Status.NOT_CERTIFIED
                for c, w in zip(clean, worst)
            ]
        else:
            _, margins = krr.worst_case_multiclass(weights, blocks.y_l, task.instance.num_classes, k)
            worst = np.nanmin(margins, axis=1)
            status = [Status.CERTIFIED if w > 0 else Status.NOT_CERTIFIED for w in worst]
            flips = [None] * num_targets
        seconds = (time.perf_counter() - t0) / max(num_targets, 1)
        for i, out in enumerate(outs):
            out.budgets[k] = BudgetOutcome(status[i], Method.EXACT, float(worst[i]), None, flips[i], seconds, False)
    outs = [out for out in outs if out.position not in skip]
    for out in outs:
        done(out)
    return outs


def collective(
    blocks: KernelBlocks,
    task: CertificationTask,
    fit: CleanFit,
    budgets: Sequence[int],
    done: Callable[[int, CollectiveOutcome], None],
) -> dict[int, CollectiveOutcome]:
    """Per budget of ``budgets``, the largest number of targets one flip set changes (a small MILP)."""
    weights = _weights(blocks, task)
    num_targets = len(blocks.y_t)
    out = {}
    for k in budgets:
        res = krr.collective_binary(weights, blocks.y_l, k, spec=task.solver)
        count = None if res.objective is None else int(res.objective)
        proven = res.status == SolveStatus.OPTIMAL
        if proven:
            upper = count
        else:
            upper = int(np.floor(res.bound + 1e-6)) if res.bound is not None else num_targets
        out[k] = CollectiveOutcome(
            SolveStatus.OPTIMAL if proven else SolveStatus.UNKNOWN,
            Method.MILP,
            count if proven else None,
            int(upper),
            int(num_targets - upper),
            res.flips,
            res.seconds,
            best_found=count,
            milp_targets=num_targets,
            solver_status=res.raw_status,
        )
        done(k, out[k])
    return out
