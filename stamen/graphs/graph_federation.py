"""A federation of graph sets: many small graphs shared out to clients, each client's split three ways.

Graph classification (``task='graph-classification'``) reads a graph set
(:func:`stamen.graphs.names.is_graph_set`): ``graphs-synth`` (:mod:`stamen.graphs.graph_sets`), ``tu:NAME``
(:mod:`stamen.graphs.tu_folder`) or a plug-in's (:class:`stamen.graphs.names.DatasetSpec`). Its clients hold
whole graphs, not subgraphs of one graph, so nothing is cut:

- the graphs are shared out by the partitioner over graphs (:func:`stamen.graphs.names.graph_set_partitioners`):
  ``label-dirichlet`` deals each class's graphs by ``Dirichlet(alpha)`` shares, ``random`` deals a
  seeded permutation evenly (:func:`stamen.graphs.partition.partition_nodes`, whose items are here graphs);
  a dataset list (``graphs-synth+tu:MUTAG``) is dealt one dataset per client by ``cross-dataset``
  (:mod:`stamen.graphs.cross_dataset`);
- each client's graphs are split train/validation/test by ``train-frac`` and ``val-frac``
  (:func:`stamen.graphs.splits.split_masks`, seeded by the run's seed and the client's index).

A client's data is one :class:`torch_geometric.data.Batch` of its graphs (``x``, ``edge_index``,
``batch``, ``y`` one class per graph) with graph-level ``train_mask``, ``val_mask``, ``test_mask``
and ``num_classes``: a ``Data`` as every client's is, so it moves to a device and is cached as one.
The federation's ``graph`` is the batch of every graph; ``parts`` hold graph ids; no edge is cut.
"""

from __future__ import annotations

import torch
from torch_geometric.data import Batch, Data

from stamen.graphs.cross_dataset import build_cross_dataset
from stamen.graphs.federation_data import Federation
from stamen.graphs.graph_set_clients import client_batch, load_graph_set
from stamen.graphs.names import (
    cross_dataset_problem,
    graph_set_partitioners,
    is_dataset_list,
)
from stamen.graphs.partition import partition_nodes
from stamen.graphs.spec import FederationSpec


def build_graph_federation(spec: FederationSpec) -> Federation:
    """The clients' graph batches of ``spec`` (see the module docstring)."""
    problem = cross_dataset_problem(spec.dataset, spec.partitioner, spec.num_clients)  # before any graph is read
    if problem:
        raise ValueError(problem)
    if is_dataset_list(spec.dataset):
        return build_cross_dataset(spec)
    if spec.partitioner not in graph_set_partitioners():
        raise ValueError(
            f"partitioner={spec.partitioner!r} cuts one graph by its edges; dataset {spec.dataset!r} is a set of "
            f"graphs shared out whole: use partitioner {' or '.join(map(repr, graph_set_partitioners()))}"
        )
    graphs = load_graph_set(spec.dataset, spec.data_root or None, spec.graph_seed)
    labels = torch.cat([g.y for g in graphs])
    num_classes = int(labels.max()) + 1
    index = Data(y=labels, num_nodes=len(graphs))  # the graphs as the partitioner's items
    parts = partition_nodes(index, spec.num_clients, spec.partitioner, spec.seed, spec.dirichlet_alpha, "graphs")
    clients = [client_batch(graphs, part, spec, i, num_classes) for i, part in enumerate(parts)]
    whole = Batch.from_data_list(graphs)
    whole.num_classes = num_classes
    return Federation(spec=spec, graph=whole, parts=parts, clients=clients, new_client=None, cut_edges=0)
