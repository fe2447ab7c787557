"""Link prediction: whether an edge joins two nodes.

Each client splits its own edges into training, validation and test edges with seeded non-edges beside
them (:mod:`stamen.graphs.link_splits`), trains an encoder with a dot-product (or MLP) decoder on its
training edges against sampled non-edges, and is scored by AUC, average precision and Hits@K
(:mod:`stamen.tasks.link_prediction.metrics`); the edges the partition cut, which no client sees, are scored by the
same model too (the ``cut`` figures). AUC and AP do not add over clients as counts do: the server pools
each client's figure weighted by its positive edges of the set (:attr:`stamen.contract.tasks.Pooling.WEIGHTED`).
The client part is :mod:`stamen.tasks.link_prediction.client`.

Its clients' training runs FedAvg's local step, so it admits the algorithms whose server only combines
weights (``any_task``). DP-SGD needs a record whose gradient is its own, and an edge is none here; a label
flip of a link is a structure attack. This module is the task's spec only (no torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.figures import LINK_TASK_FIGURES
from stamen.contract.tasks import CERTIFIES_NODE_CLASSIFIER, Pooling, TaskSpec

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig


def _any_task(spec: AlgorithmSpec) -> bool:
    """Its clients run the task's own local step and its server only combines weights (``any_task``)."""
    return spec.any_task


def _check(config: RunConfig) -> None:
    if config.link_val_frac + config.link_test_frac >= 1:
        raise ValueError(
            f"link-val-frac + link-test-frac must be < 1 (the training edges get the rest), "
            f"got {config.link_val_frac} + {config.link_test_frac}"
        )


SPEC = TaskSpec(
    "link-prediction",
    "whether an edge joins two nodes, on each client's own edges and on the cut ones (AUC, AP, Hits@K)",
    client="stamen.tasks.link_prediction.client",
    figures=LINK_TASK_FIGURES,
    headline="auc",
    headline_label="AUC",
    pooling=Pooling.WEIGHTED,
    examples="edges",
    admits=_any_task,
    refused="its client part trains a node classifier (class prototypes, label moments, heads, "
    "generated neighbours), not an edge scorer",
    privacy=("none", "client-dp"),
    privacy_refused="DP-SGD clips per-record gradients, and an edge is no record here: it is both a "
    "training label and a message path of the encoder, so one edge moves the gradients of every edge "
    "near its endpoints",
    attacks_refused=(
        (
            "label-flip",
            "flipping a link's label adds a non-edge to or removes an edge from the client's training "
            "graph, which is also the encoder's message graph: a structure attack, not a label flip",
        ),
    ),
    fixed=(
        ("unseen-node-frac", "hides nodes from node classification's training split"),
        ("missing-classes", "withholds node labels"),
        ("new-client", "holds out a client for node classification"),
        ("certify-budgets", CERTIFIES_NODE_CLASSIFIER),
        (
            "unlearn-request",
            "forgets nodes, classes or clients from a node classifier: its methods edit a classifier's head, "
            "relabel or mask training nodes, none forgets a link predictor's training edges (no 'edges:' "
            "request yet)",
        ),
    ),
    model_keys=("link-decoder",),
    check=_check,
)
