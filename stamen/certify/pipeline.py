"""The certification pipeline: one task in, one report out, for every model and mode.

:func:`run` computes the kernel (the NTK of ``task.arch`` on the instance's graph, or
the task's own kernel), cuts its labelled/target blocks, fits the clean model of the
registered plug-in (:data:`stamen.certify.registry.MODELS`) and certifies the targets in the
task's mode. Records are built here, once, for every model: a binary target's
prediction is the first class when its clean score is ``>= 0`` (the same tie-breaking
as the SVM's ``predict``), and it is correct when that is its label.
``stamen certify`` and the per-client certificates of a federated run both call it.

A long certification keeps its work in *units*: a target (sample-wise: all its budgets,
the cascade's own granularity, since a smaller budget's counterexample decides the
larger ones) or a budget (collective). :func:`run` reports each unit as it is decided
(``on_target``, ``on_budget``) and takes the units decided by an earlier, interrupted
run (:class:`Finished`): those are reused, not computed again. A unit depends on no
other unit, so a resumed report equals an uninterrupted one (apart from timings). For
the same reason ``task.workers`` processes may decide the targets (:mod:`stamen.certify.parallel`):
``on_target`` is still called in this process, in the order the targets finish, and the
report is the same for every number of workers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from stamen.certify.ntk import ntk
from stamen.certify.outcome import CollectiveOutcome, TargetOutcome
from stamen.certify.registry import model_plugin
from stamen.certify.report import CertificateReport, TargetRecord
from stamen.certify.task import CertificationTask, CleanFit, KernelBlocks


class Stage(StrEnum):
    """The steps of :func:`run`, in order (``on_stage`` hears each as it begins)."""

    KERNEL = "kernel"  # the NTK over all nodes (or the task's own kernel)
    FIT = "fit"  # the clean model (C by cross-validation when asked)
    CERTIFY = "certify"  # the targets (sample-wise) or the budgets (collective)


@dataclass
class Finished:
    """Units of a task decided earlier (read back from :mod:`stamen.certify.journal`): reused as they are."""

    targets: dict[int, TargetOutcome] = field(default_factory=dict)  # position in instance.targets -> outcome
    budgets: dict[int, CollectiveOutcome] = field(default_factory=dict)  # budget -> outcome (collective)


def kernel_of(task: CertificationTask) -> np.ndarray:
    """The task's kernel over all nodes of its instance (a user kernel was validated by the task)."""
    inst = task.instance
    if task.kernel is not None:
        return task.kernel
    return ntk(inst.x, inst.edge_index, task.arch, task.depth, task.normalization, task.ntk_variant)


def run(
    task: CertificationTask,
    progress: Callable[[int], None] | None = None,
    *,
    finished: Finished | None = None,
    on_target: Callable[[int, TargetOutcome], None] | None = None,
    on_budget: Callable[[int, CollectiveOutcome], None] | None = None,
    on_stage: Callable[[Stage], None] | None = None,
) -> CertificateReport:
    """Certify ``task``.

    ``progress(n)`` is called as targets are certified here (``len(targets)`` in all,
    less the ``finished`` ones); ``on_target(position, outcome)`` as each target is decided
    (sample-wise), ``on_budget(k, outcome)`` as each budget is (collective); ``on_stage``
    as each :class:`Stage` begins. Units in ``finished`` are not computed again.
    """
    started = time.perf_counter()
    finished = finished if finished is not None else Finished()
    if on_stage is not None:
        on_stage(Stage.KERNEL)
    blocks = KernelBlocks.from_kernel(kernel_of(task), task.instance)
    plugin = model_plugin(task.model)
    if on_stage is not None:
        on_stage(Stage.FIT)
    fit: CleanFit = plugin.fit(blocks, task)
    num_targets = len(task.instance.targets)
    if on_stage is not None:
        on_stage(Stage.CERTIFY)
    targets: list[TargetRecord] = []
    collective: dict[int, CollectiveOutcome] = {}
    if task.mode == "collective":
        collective = _collective(task, plugin, blocks, fit, finished, on_budget)
        if progress is not None:
            progress(num_targets)
    else:
        outcomes = _samplewise(task, plugin, blocks, fit, finished, on_target, progress)
        targets = [_record(task, i, outcomes[i], fit) for i in range(num_targets)]
    truth = task.instance.y[task.instance.targets]
    return CertificateReport(
        task=task,
        C=fit.C,
        ridge=fit.ridge,
        clean_accuracy=float(np.mean(fit.predicted == truth)) if num_targets else 0.0,
        num_targets=num_targets,
        targets=targets,
        collective=collective,
        seconds=time.perf_counter() - started,
        cv_accuracy=fit.cv_accuracy,
    )


def _samplewise(
    task: CertificationTask,
    plugin,
    blocks: KernelBlocks,
    fit: CleanFit,
    finished: Finished,
    on_target: Callable[[int, TargetOutcome], None] | None,
    progress: Callable[[int], None] | None,
) -> dict[int, TargetOutcome]:
    """Every target's outcome by position: the finished ones reused, the rest certified."""
    num_targets = len(task.instance.targets)
    outcomes = {i: out for i, out in finished.targets.items() if 0 <= i < num_targets}
    pending = [i for i in range(num_targets) if i not in outcomes]
    if not pending:
        return outcomes

    def done(outcome: TargetOutcome) -> None:
        outcomes[outcome.position] = outcome
        if on_target is not None:
            on_target(outcome.position, outcome)
        if progress is not None:
            progress(1)

    # the blocks stay whole (finished targets are skipped, not cut out), so every figure rounds the same
    plugin.samplewise(blocks, task, fit, done, frozenset(outcomes))
    missing = [i for i in pending if i not in outcomes]
    if missing:  # a plug-in must report every target it was given
        raise RuntimeError(f"model {task.model} did not report targets at positions {missing[:5]}")
    return outcomes


def _collective(
    task: CertificationTask,
    plugin,
    blocks: KernelBlocks,
    fit: CleanFit,
    finished: Finished,
    on_budget: Callable[[int, CollectiveOutcome], None] | None,
) -> dict[int, CollectiveOutcome]:
    """Every budget's collective outcome (in budget order): the finished ones reused, the rest certified."""
    outcomes = {k: out for k, out in finished.budgets.items() if k in task.budgets}
    pending = [k for k in task.budgets if k not in outcomes]

    def done(k: int, outcome: CollectiveOutcome) -> None:
        outcomes[k] = outcome
        if on_budget is not None:
            on_budget(k, outcome)

    if pending:
        plugin.collective(blocks, task, fit, pending, done)
    missing = [k for k in task.budgets if k not in outcomes]
    if missing:
        raise RuntimeError(f"model {task.model} did not report budgets {missing}")
    return {k: outcomes[k] for k in task.budgets}


def _record(task: CertificationTask, i: int, outcome: TargetOutcome, fit: CleanFit) -> TargetRecord:
    inst = task.instance
    t = int(inst.targets[i])
    if task.binary:
        predicted = 0 if outcome.clean_score >= 0 else 1
    else:
        predicted = int(fit.predicted[i])
    return TargetRecord(
        node=int(inst.node_ids[t]),
        label=int(inst.class_names[int(inst.y[t])]),
        predicted=int(inst.class_names[predicted]),
        correct=bool(predicted == inst.y[t]),
        clean_score=float(outcome.clean_score),
        budgets=dict(outcome.budgets),
    )
