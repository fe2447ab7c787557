"""Exact certification of (graph) neural networks against label poisoning.

Implements the QPCert approach of Sabanayagam, Gosch et al., "Exact Certification of
(Graph) Neural Networks Against Label Poisoning" (ICLR 2025): a wide GNN trained with
hinge loss behaves like a bias-free kernel SVM with the network's NTK; the SVM dual's
KKT conditions turn the label-flip attack into a MILP.

Modules: :mod:`certify.ntk` (closed-form NTKs, kernel validation), :mod:`certify.svm`
(high-precision bias-free SVM), :mod:`certify.milp` (sample-wise, collective and
multi-class certificates), :mod:`certify.screening` (sound bound and greedy attack),
:mod:`certify.exhaustive` (exact sweep over all flip sets, shared by all targets),
:mod:`certify.solvers` (HiGHS/CBC through PuLP), :mod:`certify.krr` (kernel ridge
regression certificates), :mod:`certify.federated` (client-restricted attackers),
:mod:`certify.partition`, :mod:`certify.data`, :mod:`certify.bruteforce` (exhaustive
oracle), :mod:`certify.report`.
"""

from certify.krr import KernelRidge
from certify.milp import (
    CERTIFIED,
    NOT_CERTIFIED,
    UNKNOWN,
    CollectiveMILP,
    PairwiseMILP,
    SampleWiseMILP,
    certify_collective,
    certify_multiclass,
    certify_samplewise,
)
from certify.ntk import ntk, validate_kernel
from certify.solvers import SolverSpec
from certify.svm import KernelSVM, OneVsAllSVM, select_C

__all__ = [
    "CERTIFIED",
    "NOT_CERTIFIED",
    "UNKNOWN",
    "CollectiveMILP",
    "KernelRidge",
    "KernelSVM",
    "OneVsAllSVM",
    "PairwiseMILP",
    "SampleWiseMILP",
    "SolverSpec",
    "certify_collective",
    "certify_multiclass",
    "certify_samplewise",
    "ntk",
    "select_C",
    "validate_kernel",
]
