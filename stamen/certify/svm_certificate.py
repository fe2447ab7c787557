"""Certificate model ``svm``: the bias-free kernel SVM (hinge loss) and its exact certificates.

A wide GNN trained with hinge loss behaves like this SVM with the network's NTK
(Sabanayagam, Gosch et al., ICLR 2025). Binary sample-wise certificates run the
screening cascade (:func:`stamen.certify.cascade.certify_samplewise`); several classes use
one-vs-all SVMs (:func:`stamen.certify.cascade_multiclass.certify_multiclass`); a client-restricted
attacker uses :func:`stamen.certify.federated.certify_against_clients`; the collective mode
:func:`stamen.certify.cascade.certify_collective`. ``C = "cv"`` picks C by stratified 4-fold
cross-validation on the labelled nodes (:func:`stamen.certify.svm.select_C`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from stamen.certify.cascade import certify_collective, certify_samplewise
from stamen.certify.cascade_multiclass import certify_multiclass
from stamen.certify.federated import certify_against_clients, merge_clients
from stamen.certify.outcome import CollectiveOutcome, TargetOutcome
from stamen.certify.svm import KernelSVM, OneVsAllSVM, select_C
from stamen.certify.task import CertificationTask, CleanFit, KernelBlocks


def fit(blocks: KernelBlocks, task: CertificationTask) -> CleanFit:
    """Train the clean SVM (choosing C first when ``task.C == "cv"``)."""
    cv_accuracy = None
    c = task.C
    if c == "cv":
        c, scores = select_C(blocks.k_ll, blocks.y_l, seed=task.seed)
        cv_accuracy = {str(k): v for k, v in scores.items()}
    c = float(c)
    if task.binary:
        scores = KernelSVM(c).fit(blocks.k_ll, blocks.y_l).decision_function(blocks.k_tl)
        predicted = np.where(scores >= 0, 0, 1)
    else:
        predicted = OneVsAllSVM(c).fit(blocks.k_ll, blocks.y_l, task.instance.num_classes).predict(blocks.k_tl)
    return CleanFit(c, None, predicted, cv_accuracy)


def samplewise(
    blocks: KernelBlocks,
    task: CertificationTask,
    fit: CleanFit,
    done: Callable[[TargetOutcome], None],
    skip: Collection[int] = (),
) -> list[TargetOutcome]:
    """Per target and budget: certified, not certified or unknown (see :mod:`stamen.certify.cascade`).

    ``done`` hears each target as the cascade decides it; against attacking clients the
    targets are decided together (one cascade per client), so ``done`` hears them at the end.
    """
    sweep = {"method": task.method, "enumerate_limit": task.enumerate_limit}
    if not task.binary:
        return certify_multiclass(
            blocks.k_ll,
            blocks.k_tl,
            blocks.y_l,
            fit.C,
            list(task.budgets),
            task.instance.num_classes,
            spec=task.solver,
            k_tt=blocks.k_tt,
            on_target=done,
            skip=skip,
            screen=task.screen,
            workers=task.workers,
            **sweep,
        )
    if task.attacker is not None:
        outcomes, _ = certify_against_clients(
            blocks.k_ll,
            blocks.k_tl,
            blocks.y_l,
            fit.C,
            list(task.budgets),
            task.owner,
            task.attacker,
            task.solver,
            blocks.k_tt,
            skip=skip,
            **sweep,
        )
        merged = merge_clients(outcomes)
        for outcome in merged:
            done(outcome)
        return merged
    return certify_samplewise(
        blocks.k_ll,
        blocks.k_tl,
        blocks.y_l,
        fit.C,
        list(task.budgets),
        spec=task.solver,
        screen=task.screen,
        decide=task.decide,
        k_tt=blocks.k_tt,
        on_target=done,
        skip=skip,
        workers=task.workers,
        **sweep,
    )


def collective(
    blocks: KernelBlocks,
    task: CertificationTask,
    fit: CleanFit,
    budgets: Sequence[int],
    done: Callable[[int, CollectiveOutcome], None],
) -> dict[int, CollectiveOutcome]:
    """Per budget of ``budgets``, how many targets one flip set can change (see :mod:`stamen.certify.cascade`)."""
    return certify_collective(
        blocks.k_ll,
        blocks.k_tl,
        blocks.y_l,
        fit.C,
        list(budgets),
        None,
        task.solver,
        k_tt=blocks.k_tt,
        method=task.method,
        enumerate_limit=task.enumerate_limit,
        on_budget=done,
    )
