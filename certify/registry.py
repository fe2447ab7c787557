"""The certificates Stamen offers: models x modes, each a name in a small dict.

A *model* is a plug-in module (:class:`CertificateModel`) that fits the clean model on
the labelled kernel block and certifies the targets in each *mode*:

* ``samplewise``: one certificate per target (the attacker picks a flip set per target);
* ``collective``: one flip set against all targets at once (how many can change).

Adding a model is one module with ``fit``, ``samplewise`` and ``collective`` and one line
in :data:`MODELS`. Both certify what they are asked (targets not skipped, budgets) and report each
target or budget as it is decided, so that a long job keeps its finished work. The
``stamen certify`` choices and their ``--help`` derive from these dicts. This module
imports nothing heavy: the plug-in loads on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from certify.outcome import CollectiveOutcome, TargetOutcome
    from certify.task import CertificationTask, CleanFit, KernelBlocks


class CertificateModel(Protocol):
    """What a model plug-in module provides (see :mod:`certify.svm_certificate`)."""

    def fit(self, blocks: KernelBlocks, task: CertificationTask) -> CleanFit: ...

    def samplewise(
        self,
        blocks: KernelBlocks,
        task: CertificationTask,
        fit: CleanFit,
        done: Callable[[TargetOutcome], None],
        skip: Collection[int],
    ) -> list[TargetOutcome]:
        """One outcome per target row of ``blocks`` not in ``skip``; ``done(outcome)`` as each is decided."""
        ...

    def collective(
        self,
        blocks: KernelBlocks,
        task: CertificationTask,
        fit: CleanFit,
        budgets: Sequence[int],
        done: Callable[[int, CollectiveOutcome], None],
    ) -> dict[int, CollectiveOutcome]:
        """One outcome per budget of ``budgets``; ``done(k, outcome)`` once per budget as it is decided."""
        ...


@dataclass(frozen=True)
class ModelEntry:
    """A model's name in the registry: its module and what it supports."""

    module: str
    help: str
    multiclass: bool  # sample-wise certificates of more than two classes
    client_attacker: bool  # sample-wise certificates against one attacking client


MODELS: dict[str, ModelEntry] = {
    "svm": ModelEntry(
        "certify.svm_certificate", "bias-free kernel SVM (hinge loss), exact MILP certificates", True, True
    ),
    "krr": ModelEntry(
        "certify.krr_certificate", "kernel ridge regression, exact closed-form certificates", True, False
    ),
}

MODES: dict[str, str] = {
    "samplewise": "a certificate per target",
    "collective": "one flip set against all targets (binary tasks)",
}

#: how sample-wise and collective SVM certificates decide a budget (certify.cascade)
METHODS: dict[str, str] = {
    "auto": "exhaustive retraining sweep for budgets with at most --enumerate-limit flip sets, MILP beyond",
    "milp": "always the MILP",
    "enumerate": "always the sweep",
}

#: ``method="auto"`` sweeps all flip sets when there are at most this many (about 1.3 ms
#: per retraining for m = 20, so 20000 sets take roughly half a minute for all targets)
ENUMERATE_LIMIT = 20000


def model_plugin(name: str) -> ModuleType:
    """The plug-in module of model ``name`` (a :class:`CertificateModel`)."""
    if name not in MODELS:
        raise ValueError(f"unknown certificate model {name!r}; choose one of: {', '.join(MODELS)}")
    return importlib.import_module(MODELS[name].module)
