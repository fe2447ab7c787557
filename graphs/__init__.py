"""Graph data in, client subgraphs out: datasets, partitioners, splits."""

from graphs.csbm import make_csbm, sample_csbm
from graphs.datasets import DATASETS, load_dataset
from graphs.federation import Federation, FederationSpec, build_federation
from graphs.partition import PARTITIONERS, client_subgraph, cut_edges, partition_nodes
from graphs.splits import split_masks

__all__ = [
    "DATASETS",
    "PARTITIONERS",
    "Federation",
    "FederationSpec",
    "build_federation",
    "client_subgraph",
    "cut_edges",
    "load_dataset",
    "make_csbm",
    "partition_nodes",
    "sample_csbm",
    "split_masks",
]
