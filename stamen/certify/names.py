"""The names certify offers, each with a line of help: declared here once, importing nothing.

Free of numpy, PyTorch and PuLP, so that the contract (:mod:`stamen.contract.certify_config`,
which declares the options of ``stamen certify``) and ``--help`` read the choices
without loading a solver. The modules that implement the names import them from here:
:mod:`stamen.certify.registry` (models, modes, search methods), :mod:`stamen.certify.solvers`
(solvers), :mod:`stamen.certify.ntk` (NTK variants, normalisations); the NTK architectures are
:data:`stamen.models.names.NTK_ARCHITECTURES`. A new model is one line in :data:`MODELS` and its
plug-in module (:class:`stamen.certify.registry.CertificateModel`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelEntry:
    """A certificate model's name: its plug-in module (loaded on first use) and what it supports."""

    module: str
    help: str
    multiclass: bool  # sample-wise certificates of more than two classes
    client_attacker: bool  # sample-wise certificates against one attacking client


MODELS: dict[str, ModelEntry] = {
    "svm": ModelEntry(
        "stamen.certify.svm_certificate", "bias-free kernel SVM (hinge loss), exact MILP certificates", True, True
    ),
    "krr": ModelEntry(
        "stamen.certify.krr_certificate", "kernel ridge regression, exact closed-form certificates", True, False
    ),
}

MODES: dict[str, str] = {
    "samplewise": "a certificate per target",
    "collective": "one flip set against all targets (binary tasks)",
}

#: how sample-wise and collective SVM certificates decide a budget (stamen.certify.cascade)
METHODS: dict[str, str] = {
    "auto": "exhaustive retraining sweep for budgets with at most --enumerate-limit flip sets, MILP beyond",
    "milp": "always the MILP",
    "enumerate": "always the sweep",
}

#: ``method="auto"`` sweeps all flip sets when there are at most this many (about 1.3 ms
#: per retraining for m = 20, so 20000 sets take roughly half a minute for all targets)
ENUMERATE_LIMIT = 20000

#: the MILP back-ends (stamen.certify.solvers)
SOLVERS: dict[str, str] = {
    "highs": "HiGHS in-process (highspy), with a warm start",
    "cbc": "CBC through PuLP, preprocessing off",
}

#: the NTK's variants (stamen.certify.ntk)
VARIANTS: dict[str, str] = {
    "textbook": "the exact infinite-width limit of the networks",
    "reference": "the kernel of the authors' qpcert code (clamped covariances)",
}

#: the graph convolutions' propagation matrices (stamen.certify.ntk)
NORMALIZATIONS: dict[str, str] = {
    "row": "D^-1 (A + I)",
    "sym": "D^-1/2 (A + I) D^-1/2",
}
