"""Exact certification of (graph) neural networks against label poisoning.

Implements the QPCert approach of Sabanayagam, Gosch et al., "Exact Certification of
(Graph) Neural Networks Against Label Poisoning" (ICLR 2025): a wide GNN trained with
hinge loss behaves like a bias-free kernel SVM with the network's NTK; the SVM dual's
KKT conditions turn the label-flip attack into a MILP.

The pipeline: a :class:`certify.task.CertificationTask` (graph or kernel, labelled
nodes, targets, budgets, model x mode from :mod:`certify.registry`) goes through
:func:`certify.pipeline.run` into one :class:`certify.report.CertificateReport`
(statuses of :mod:`certify.outcome`). Underneath: :mod:`certify.ntk` (closed-form NTKs),
:mod:`certify.svm` (high-precision bias-free SVM), :mod:`certify.cascade` (screening
cascade: sweep, bound, attack, MILP), :mod:`certify.cascade_multiclass` (its one-vs-all
counterpart), :mod:`certify.relabel` (multi-class sweeps and attacks without a MILP),
:mod:`certify.parallel` (targets on worker processes), :mod:`certify.milp` (shared KKT formulation),
:mod:`certify.milp_sample` and :mod:`certify.milp_collective` (the MILPs),
:mod:`certify.screening`, :mod:`certify.exhaustive`, :mod:`certify.solvers`,
:mod:`certify.krr`, :mod:`certify.federated` (client-restricted attackers),
:mod:`certify.partition`, :mod:`certify.data`, :mod:`certify.bruteforce` (exhaustive
oracle for tests), :mod:`certify.report`.

Attributes load on first use (PEP 562), so ``import certify.registry`` stays light.
"""

import importlib

_SOURCES = {
    "CertificateReport": "certify.report",
    "CertificationTask": "certify.task",
    "CollectiveMILP": "certify.milp_collective",
    "KernelRidge": "certify.krr",
    "KernelSVM": "certify.svm",
    "MODELS": "certify.registry",
    "MODES": "certify.registry",
    "OneVsAllSVM": "certify.svm",
    "PairwiseMILP": "certify.milp_sample",
    "SampleWiseMILP": "certify.milp_sample",
    "SolverSpec": "certify.solvers",
    "Status": "certify.outcome",
    "ntk": "certify.ntk",
    "run": "certify.pipeline",
    "select_C": "certify.svm",
    "validate_kernel": "certify.ntk",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'certify' has no attribute {name!r}")
    return getattr(importlib.import_module(_SOURCES[name]), name)
