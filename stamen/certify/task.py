"""A certification task: the graph or kernel, the labelled nodes, the targets and the settings.

:class:`CertificationTask` is everything a certificate depends on; the pipeline
(:func:`stamen.certify.pipeline.run`) turns it into one :class:`stamen.certify.report.CertificateReport`.
``stamen certify`` and a federated client (:mod:`stamen.client.certification`) build it the same
way from a :class:`stamen.certify.data.Instance` (node order = kernel order; binary tasks: class
index 0 is the label ``+1``, and a zero score is predicted as class 0).

The kernel is the NTK of ``arch`` on the instance's graph unless ``kernel`` (an
``n x n`` matrix over all nodes, validated by :func:`stamen.certify.ntk.validate_kernel`) is
given. A client-restricted attacker (``attacker``: a client id, or ``"any"`` for the
worst case over clients) may flip only the labels of the labelled nodes it owns
(``owner[i]`` = client of labelled position ``i``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stamen.certify.data import Instance
from stamen.certify.names import ENUMERATE_LIMIT, METHODS, MODELS, MODES
from stamen.certify.ntk import validate_kernel
from stamen.certify.solvers import SolverSpec


@dataclass(frozen=True, eq=False)
class CertificationTask:
    """What to certify and how (validated on construction: one clear ``ValueError``)."""

    instance: Instance
    budgets: tuple[int, ...]
    C: float | str = 0.1  # SVM box bound, or "cv" for stratified cross-validation
    model: str = "svm"
    mode: str = "samplewise"
    arch: str = "gcn"
    depth: int = 1
    normalization: str | None = None
    ntk_variant: str = "textbook"
    kernel: np.ndarray | None = field(default=None, repr=False)
    ridge: float = 1.0  # kernel ridge regression only
    solver: SolverSpec = SolverSpec()
    screen: bool = True
    decide: bool = False
    method: str = "auto"
    enumerate_limit: int = ENUMERATE_LIMIT
    owner: np.ndarray | None = field(default=None, repr=False)
    attacker: int | str | None = None
    seed: int = 0  # folds of C = "cv"
    workers: int = 1  # processes deciding the targets (sample-wise; changes no answer, stamen.certify.parallel)

    def __post_init__(self) -> None:
        budgets = tuple(sorted({int(b) for b in self.budgets}))
        object.__setattr__(self, "budgets", budgets)
        if not budgets:
            raise ValueError("budgets are empty")
        if budgets[0] < 0:
            raise ValueError(f"budgets must be >= 0, got {list(self.budgets)}")
        if self.model not in MODELS:
            raise ValueError(f"model {self.model!r} is not accepted; choose one of: {', '.join(MODELS)}")
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r} is not accepted; choose one of: {', '.join(MODES)}")
        if self.method not in METHODS:
            raise ValueError(f"method {self.method!r} is not accepted; choose one of: {', '.join(METHODS)}")
        if self.C != "cv" and not (isinstance(self.C, (int, float)) and np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a positive number or 'cv', got {self.C!r}")
        if not (self.ridge > 0):
            raise ValueError(f"ridge must be > 0, got {self.ridge}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.enumerate_limit < 0:
            raise ValueError(f"enumerate limit must be >= 0, got {self.enumerate_limit}")
        if self.kernel is not None:
            object.__setattr__(self, "kernel", validate_kernel(self.kernel, self.instance.n))
        if self.depth < 1:
            raise ValueError(f"depth must be >= 1, got {self.depth}")
        if not self.binary and self.mode == "collective":
            raise ValueError("the collective mode needs a binary task")
        if not self.binary and not MODELS[self.model].multiclass:
            raise ValueError(f"model {self.model} certifies binary tasks only")
        if self.attacker is not None:
            if self.owner is None:
                raise ValueError("a client-restricted attacker needs the owner of every labelled node")
            if self.mode != "samplewise" or not MODELS[self.model].client_attacker:
                supported = ", ".join(name for name, entry in MODELS.items() if entry.client_attacker)
                raise ValueError(f"client-restricted attackers are supported for mode samplewise, model {supported}")
            if not self.binary:
                raise ValueError("client-restricted attackers need a binary task")
            if self.attacker != "any" and not isinstance(self.attacker, int):
                raise ValueError(f"attacker must be a client id or 'any', got {self.attacker!r}")
            if len(self.owner) != len(self.instance.labeled):
                raise ValueError(f"owner needs {len(self.instance.labeled)} entries, got {len(self.owner)}")

    @property
    def binary(self) -> bool:
        return self.instance.num_classes == 2


@dataclass
class KernelBlocks:
    """The kernel blocks a certificate uses, and the labels of both node sets.

    Binary tasks: labels ``+-1`` (class index 0 -> +1); otherwise class indices.
    """

    k_ll: np.ndarray  # (m, m) labelled x labelled
    k_tl: np.ndarray  # (T, m) targets x labelled
    k_tt: np.ndarray  # (T,) the targets' kernel diagonal
    y_l: np.ndarray
    y_t: np.ndarray

    @classmethod
    def from_kernel(cls, kernel: np.ndarray, instance: Instance) -> KernelBlocks:
        lab, tgt = instance.labeled, instance.targets
        binary = instance.num_classes == 2
        y_l = instance.pm_labels(lab) if binary else instance.y[lab]
        y_t = instance.pm_labels(tgt) if binary else instance.y[tgt]
        return cls(kernel[np.ix_(lab, lab)], kernel[np.ix_(tgt, lab)], np.diag(kernel)[tgt], y_l, y_t)


@dataclass
class CleanFit:
    """The clean model: its hyper-parameters and the predicted class index of every target."""

    C: float | None
    ridge: float | None
    predicted: np.ndarray  # (T,) class index (binary: 0 when the score is >= 0)
    cv_accuracy: dict[str, float] | None = None
