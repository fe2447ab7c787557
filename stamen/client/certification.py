"""A client certifies its own predictions against label flips of its own labelled nodes.

The task is binary, as in the certification literature: the client's two most frequent
training classes, on the subgraph induced by their nodes (isolated nodes dropped, as
``stamen certify`` does; :func:`stamen.certify.data.client_instance`). The labelled set is up
to ``certify-labels-per-class`` training nodes per class and the targets up to
``certify-targets`` test nodes, both drawn with the run's seed and the partition id.
The certificate is the library's (:func:`stamen.certify.pipeline.run`, the pipeline of
``stamen certify``) for the GNN's NTK + kernel SVM with C = ``certify-c``: running
``stamen certify --graph`` on the same subgraph, labelled nodes and targets with
``--classes`` in the same order gives the same certificate node by node. Only
aggregate ratios leave the client.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from torch_geometric.data import Data

from stamen.certify.solvers import SolverSpec
from stamen.certify.task import CertificationTask
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig

if TYPE_CHECKING:
    from stamen.certify.report import CertificateReport
    from stamen.certify.task import CertificationTask


def client_task(data: Data, config: RunConfig, partition_id: int) -> CertificationTask | None:
    """This client's certification task (``None`` when it has nothing to certify)."""
    from stamen.certify.data import client_instance  # MILP solvers load only when asked

    instance = client_instance(
        data.x.cpu().numpy(),
        data.edge_index.cpu().numpy(),
        data.y.cpu().numpy(),
        data.train_mask.cpu().numpy(),
        data.test_mask.cpu().numpy(),
        config.certify_labels_per_class,
        config.certify_targets,
        seed=config.seed * 7_919 + partition_id,
    )
    if instance is None:
        return None
    return CertificationTask(
        instance=instance,
        budgets=tuple(config.budgets()),
        C=config.certify_c,
        arch=config.certify_arch,
        solver=SolverSpec("highs", config.certify_time_limit),
        seed=config.seed,
    )


def client_certificate(data: Data, config: RunConfig, partition_id: int) -> CertificateReport | None:
    """This client's certificate, target by target (``None`` when it has nothing to certify)."""
    # on use: pulp, numpy stay out of this module's import
    from stamen.certify.pipeline import run

    task = client_task(data, config, partition_id)
    return None if task is None else run(task)


def certify_local(data: Data, config: RunConfig, partition_id: int) -> dict[str, float]:
    """Certified ratios of this client's targets, per budget, as a flat metrics dict."""
    started = time.perf_counter()
    report = client_certificate(data, config, partition_id)
    if report is None:
        return {p.NUM_TARGETS: 0.0, p.CERTIFY_SECONDS: time.perf_counter() - started}
    metrics = {p.NUM_TARGETS: float(report.num_targets)}
    for budget, figures in report.aggregates().items():
        metrics[f"{p.CERTIFIED_RATIO}-{budget}"] = figures.certified_ratio
        metrics[f"{p.CERTIFIED_ACCURACY}-{budget}"] = figures.certified_accuracy
        metrics[f"{p.UNKNOWN_RATIO}-{budget}"] = figures.unknown_ratio
    metrics[p.CERTIFY_SECONDS] = time.perf_counter() - started
    return metrics
