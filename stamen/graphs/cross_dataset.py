r"""The cross-dataset split of graph-FL: one dataset of a dataset list per client.

``dataset='graphs-synth+tu:MUTAG'`` with ``partitioner='cross-dataset'`` (:mod:`stamen.graphs.names`: the
list, its checks and the refusals) is the setting GCFL and FedStar were made for: clients whose
graphs come from different sources, with different features and label spaces. With :math:`D`
datasets and :math:`K \ge D` clients:

- client :math:`i` holds dataset :math:`i \bmod D` (:func:`stamen.graphs.names.client_datasets`), so the
  datasets are dealt out in order and each has :math:`\lfloor K/D \rfloor` or
  :math:`\lceil K/D \rceil` clients;
- each dataset's graphs are split among its own clients by a seeded random permutation, dealt
  evenly (:func:`stamen.graphs.partition.partition_nodes`' ``random``, seeded by the run's seed and the
  dataset's place in the list, so that two datasets of one size are not cut alike);
- each client's graphs are split train/validation/test as every graph set's are
  (:func:`stamen.graphs.graph_set_clients.client_batch`).

One model must read every client's batches, so the datasets are brought to one shape:

- **features**: every dataset's node features are zero-padded on the right to the widest
  dataset's width :math:`F = \max_d F_d`. A graph of dataset :math:`d` keeps its own :math:`F_d`
  columns as the prefix :math:`x_{:, :F_d}` and zeros after them, so the first layer sees each
  dataset's features in its own columns' prefix, and a column means different things in different
  datasets (there is no shared feature space to align them to; FedStar's local feature encoder
  is the method that expects this);
- **classes**: the label space is the widest, :math:`C = \max_d C_d`; each client's labels stay its
  dataset's own (dataset :math:`d`'s classes are :math:`0 .. C_d - 1`, not offset), so class 0
  of two datasets is one output of the head.

The federation's ``graph`` is every dataset's graphs in list order (padded), and ``parts`` hold
ids into it: dataset :math:`d`'s graphs are ids :math:`o_d .. o_d + G_d - 1`, :math:`o_d` the graphs
of the datasets before it. No edge is cut.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Batch, Data

from stamen.graphs.federation_data import Federation
from stamen.graphs.graph_set_clients import client_batch, load_graph_set
from stamen.graphs.names import dataset_parts
from stamen.graphs.partition import partition_nodes
from stamen.graphs.spec import FederationSpec

DATASET_SEED_STRIDE = 1_009  # dataset d of the list is split with seed * stride + d


def build_cross_dataset(spec: FederationSpec) -> Federation:
    """The clients' graph batches of ``spec`` (a dataset list, ``cross-dataset``; see the module docstring)."""
    names = dataset_parts(spec.dataset)
    sets = [load_graph_set(name, spec.data_root or None, spec.graph_seed) for name in names]
    width = max(int(graph.x.size(1)) for graphs in sets for graph in graphs)
    num_classes = max(int(torch.cat([graph.y for graph in graphs]).max()) + 1 for graphs in sets)
    graphs = [pad_features(graph, width) for part in sets for graph in part]
    offsets = np.cumsum([0, *(len(part) for part in sets)])
    parts: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * spec.num_clients
    for number, (name, part) in enumerate(zip(names, sets, strict=True)):
        holders = list(range(number, spec.num_clients, len(names)))
        index = Data(y=torch.cat([graph.y for graph in part]), num_nodes=len(part))
        shares = partition_nodes(
            index, len(holders), "random", spec.seed * DATASET_SEED_STRIDE + number, unit=f"graphs of {name!r}"
        )
        for client, share in zip(holders, shares, strict=True):
            parts[client] = share + int(offsets[number])
    clients = [client_batch(graphs, part, spec, i, num_classes) for i, part in enumerate(parts)]
    whole = Batch.from_data_list(graphs)
    whole.num_classes = num_classes
    return Federation(spec=spec, graph=whole, parts=parts, clients=clients, new_client=None, cut_edges=0)


def pad_features(graph: Data, width: int) -> Data:
    """``graph`` with its node features zero-padded on the right to ``width`` columns (its own as the prefix)."""
    padded = graph.clone()
    padded.x = torch.nn.functional.pad(graph.x, (0, width - int(graph.x.size(1))))
    return padded
