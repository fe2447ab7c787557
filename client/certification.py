"""A client certifies its own predictions against label flips of its own labelled nodes.

The task is binary, as in the certification literature: the client's two most frequent
training classes, on the subgraph induced by their nodes (isolated nodes dropped, as
``stamen certify`` does). The labelled set is up to
``certify-labels-per-class`` training nodes per class and the targets up to
``certify-targets`` test nodes, both drawn with the run's seed. The certificate is the
exact MILP one of :mod:`certify` for the GNN's NTK + kernel SVM; only aggregate ratios
leave the client.
"""

from __future__ import annotations

import time

import numpy as np
from torch_geometric.data import Data

from models import protocol as p
from models.run_config import RunConfig


def certify_local(data: Data, config: RunConfig, partition_id: int) -> dict[str, float]:
    """Certified ratios of this client's targets, per budget, as a flat metrics dict."""
    from certify.data import select_classes  # MILP solvers load only when asked
    from certify.federated import client_certified_ratios

    started = time.perf_counter()
    y = data.y.cpu().numpy()
    train, test = data.train_mask.cpu().numpy(), data.test_mask.cpu().numpy()
    counts = np.bincount(y[train], minlength=int(data.num_classes))
    classes = np.argsort(-counts, kind="stable")[:2]
    if counts[classes[1]] == 0:  # fewer than two labelled classes: nothing to certify
        return {p.NUM_TARGETS: 0.0, p.CERTIFY_SECONDS: time.perf_counter() - started}
    x, edge_index, local_y, _, nodes = select_classes(
        data.x.cpu().numpy(), data.edge_index.cpu().numpy(), y, [int(c) for c in classes], binary=True
    )
    local_y = 1 - local_y  # select_classes numbers classes in order; the client's largest is +1
    local_train, local_test = train[nodes], test[nodes]
    rng = np.random.default_rng(config.seed * 7_919 + partition_id)
    labeled = np.concatenate(
        [
            rng.permutation(np.flatnonzero(local_train & (local_y == c)))[: config.certify_labels_per_class]
            for c in (0, 1)
        ]
    )
    targets = rng.permutation(np.flatnonzero(local_test))[: config.certify_targets]
    if targets.size == 0:
        return {p.NUM_TARGETS: 0.0, p.CERTIFY_SECONDS: time.perf_counter() - started}
    ratios = client_certified_ratios(
        x,
        edge_index,
        local_y,
        np.sort(labeled),
        targets,
        config.budgets(),
        arch=config.certify_arch,
        C=config.certify_c,
        time_limit=config.certify_time_limit,
    )
    metrics = {p.NUM_TARGETS: float(targets.size)}
    for budget, figures in ratios.items():
        metrics[f"{p.CERTIFIED_RATIO}-{budget}"] = figures["certified_ratio"]
        metrics[f"{p.CERTIFIED_ACCURACY}-{budget}"] = figures["certified_accuracy"]
        metrics[f"{p.UNKNOWN_RATIO}-{budget}"] = figures["unknown_ratio"]
    metrics[p.CERTIFY_SECONDS] = time.perf_counter() - started
    return metrics
