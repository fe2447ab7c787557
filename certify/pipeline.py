"""The certification pipeline: one task in, one report out, for every model and mode.

:func:`run` computes the kernel (the NTK of ``task.arch`` on the instance's graph, or
the task's own kernel), cuts its labelled/target blocks, fits the clean model of the
registered plug-in (:data:`certify.registry.MODELS`) and certifies the targets in the
task's mode. Records are built here, once, for every model: a binary target's
prediction is the first class when its clean score is ``>= 0`` (the same tie-breaking
as the SVM's ``predict``), and it is correct when that is its label.
``stamen certify`` and the per-client certificates of a federated run both call it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from certify.ntk import ntk
from certify.outcome import TargetOutcome
from certify.registry import model_plugin
from certify.report import CertificateReport, TargetRecord
from certify.task import CertificationTask, CleanFit, KernelBlocks


def kernel_of(task: CertificationTask) -> np.ndarray:
    """The task's kernel over all nodes of its instance (a user kernel was validated by the task)."""
    inst = task.instance
    if task.kernel is not None:
        return task.kernel
    return ntk(inst.x, inst.edge_index, task.arch, task.depth, task.normalization, task.ntk_variant)


def run(task: CertificationTask, progress: Callable[[int], None] | None = None) -> CertificateReport:
    """Certify ``task``; ``progress(n)`` is called as targets finish (``len(targets)`` in all)."""
    started = time.perf_counter()
    blocks = KernelBlocks.from_kernel(kernel_of(task), task.instance)
    plugin = model_plugin(task.model)
    fit: CleanFit = plugin.fit(blocks, task)
    num_targets = len(task.instance.targets)
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(n)

    targets: list[TargetRecord] = []
    collective = {}
    if task.mode == "collective":
        collective = plugin.collective(blocks, task, fit)
    else:
        outcomes = plugin.samplewise(blocks, task, fit, advance)
        targets = [_record(task, i, out, fit) for i, out in enumerate(outcomes)]
    if progress is not None and done < num_targets:
        progress(num_targets - done)
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
