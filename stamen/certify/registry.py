"""The certificates Stamen offers: models x modes, each a name in a small dict.

A *model* is a plug-in module (:class:`CertificateModel`) that fits the clean model on
the labelled kernel block and certifies the targets in each *mode*:

* ``samplewise``: one certificate per target (the attacker picks a flip set per target);
* ``collective``: one flip set against all targets at once (how many can change).

Adding a model is one module with ``fit``, ``samplewise`` and ``collective`` and one line
in :data:`stamen.certify.names.MODELS`. Both certify what they are asked (targets not skipped, budgets) and report each
target or budget as it is decided, so that a long job keeps its finished work. The names
(models, modes, search methods) are declared in :mod:`stamen.certify.names`, which imports nothing,
and re-exported here; the ``stamen certify`` choices and their ``--help`` derive from them
(:mod:`stamen.contract.certify_config`). This module imports nothing heavy: the plug-in loads on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from stamen.certify.names import ENUMERATE_LIMIT, METHODS, MODELS, MODES, ModelEntry

if TYPE_CHECKING:
    from stamen.certify.outcome import CollectiveOutcome, TargetOutcome
    from stamen.certify.task import CertificationTask, CleanFit, KernelBlocks


class CertificateModel(Protocol):
    """What a model plug-in module provides (see :mod:`stamen.certify.svm_certificate`)."""

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


__all__ = ["ENUMERATE_LIMIT", "METHODS", "MODELS", "MODES", "CertificateModel", "ModelEntry", "model_plugin"]


def model_plugin(name: str) -> ModuleType:
    """The plug-in module of model ``name`` (a :class:`CertificateModel`)."""
    if name not in MODELS:
        raise ValueError(f"unknown certificate model {name!r}; choose one of: {', '.join(MODELS)}")
    return importlib.import_module(MODELS[name].module)
