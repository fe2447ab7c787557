"""Exact certification of (graph) neural networks against label poisoning.

Implements the QPCert approach of Sabanayagam, Gosch et al., "Exact Certification of
(Graph) Neural Networks Against Label Poisoning" (ICLR 2025): a wide GNN trained with
hinge loss behaves like a bias-free kernel SVM with the network's NTK; the SVM dual's
KKT conditions turn the label-flip attack into a MILP.

The pipeline: a :class:`stamen.certify.task.CertificationTask` (graph or kernel, labelled
nodes, targets, budgets, model x mode from :mod:`stamen.certify.registry`) goes through
:func:`stamen.certify.pipeline.run` into one :class:`stamen.certify.report.CertificateReport`
(statuses of :mod:`stamen.certify.outcome`). Underneath: :mod:`stamen.certify.ntk` (closed-form NTKs),
:mod:`stamen.certify.svm` (high-precision bias-free SVM), :mod:`stamen.certify.cascade` (screening
cascade: sweep, bound, attack, MILP), :mod:`stamen.certify.cascade_multiclass` (its one-vs-all
counterpart), :mod:`stamen.certify.relabel` (multi-class sweeps and attacks without a MILP),
:mod:`stamen.certify.parallel` (targets on worker processes), :mod:`stamen.certify.milp` (shared KKT formulation),
:mod:`stamen.certify.milp_sample` and :mod:`stamen.certify.milp_collective` (the MILPs),
:mod:`stamen.certify.screening`, :mod:`stamen.certify.exhaustive`, :mod:`stamen.certify.solvers`,
:mod:`stamen.certify.krr`, :mod:`stamen.certify.federated` (client-restricted attackers),
:mod:`stamen.certify.partition`, :mod:`stamen.certify.data`, :mod:`stamen.certify.bruteforce` (exhaustive
oracle for tests), :mod:`stamen.certify.report`.

Attributes load on first use (PEP 562), so ``import stamen.certify.registry`` stays light.
"""

import importlib

_SOURCES = {
    "CertificateReport": "stamen.certify.report",
    "CertificationTask": "stamen.certify.task",
    "CollectiveMILP": "stamen.certify.milp_collective",
    "KernelRidge": "stamen.certify.krr",
    "KernelSVM": "stamen.certify.svm",
    "MODELS": "stamen.certify.registry",
    "MODES": "stamen.certify.registry",
    "OneVsAllSVM": "stamen.certify.svm",
    "PairwiseMILP": "stamen.certify.milp_sample",
    "SampleWiseMILP": "stamen.certify.milp_sample",
    "SolverSpec": "stamen.certify.solvers",
    "Status": "stamen.certify.outcome",
    "ntk": "stamen.certify.ntk",
    "run": "stamen.certify.pipeline",
    "select_C": "stamen.certify.svm",
    "validate_kernel": "stamen.certify.ntk",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'stamen.certify' has no attribute {name!r}")
    return getattr(importlib.import_module(_SOURCES[name]), name)
