"""Graph classification: a class per small graph, for clients that each hold a set of graphs.

The dataset is a *graph set* (:func:`stamen.graphs.names.is_graph_set`: ``graphs-synth`` or ``tu:NAME``),
shared out whole by ``label-dirichlet`` or ``random`` (:mod:`stamen.graphs.graph_federation`), or a list of
graph sets dealt one dataset per client by ``cross-dataset`` (:mod:`stamen.graphs.cross_dataset`). A GIN
or GCN with a readout per graph (:mod:`stamen.tasks.graph_classification.model`) trains on mini-batches of
graphs and is scored by accuracy over the clients' validation and test graphs, under node
classification's figure names, pooled from counts. A graph is a record of its own, so DP-SGD runs per graph.
The client part is :mod:`stamen.tasks.graph_classification.client`. This module is the task's spec only
(no torch).
"""

from __future__ import annotations

from typing import Any

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.tasks import CERTIFIES_NODE_CLASSIFIER, TaskSpec
from stamen.graphs.names import CROSS_DATASET, is_dataset_list


def _weights_only(spec: AlgorithmSpec) -> bool:
    """The weight-combining algorithms (those made for this task are admitted by their spec's ``task``)."""
    return spec.any_task


def _graph_set_partitioner(values: dict[str, Any]) -> str:
    """A graph set's default partitioner: ``cross-dataset`` for a dataset list (one dataset per client), else an
    even seeded deal of the graphs (``random``)."""
    return CROSS_DATASET if is_dataset_list(str(values.get("dataset", ""))) else "random"


SPEC = TaskSpec(
    "graph-classification",
    "a class per small graph, for clients that each hold a set of graphs (accuracy over graphs)",
    client="stamen.tasks.graph_classification.client",
    examples="graphs",
    admits=_weights_only,
    refused="its client part trains a node classifier (class prototypes, label moments, heads, "
    "generated neighbours), not a graph classifier",
    graph_sets=True,
    full_batch=False,
    defaults=(("dataset", "graphs-synth"), ("partitioner", _graph_set_partitioner)),
    fixed=(
        ("unseen-node-frac", "hides nodes of one graph from node classification's training split"),
        ("missing-classes", "withholds node labels"),
        ("new-client", "holds out a subgraph for node classification"),
        ("certify-budgets", CERTIFIES_NODE_CLASSIFIER),
        ("unlearn-request", "forgets nodes, classes or clients from a node classifier"),
    ),
)
