"""Graph data in, client subgraphs out: datasets, partitioners, splits.

Attributes load on first use (PEP 562), so ``import stamen.graphs.names`` stays light.
"""

import importlib
import warnings

# PyG scripts functions with torch.jit at import time; torch 2.13 warns about each: known noise.
warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning)

_SOURCES = {
    "make_csbm": "stamen.graphs.csbm",
    "make_paper_csbm": "stamen.graphs.csbm",
    "sample_csbm": "stamen.graphs.csbm",
    "load_dataset": "stamen.graphs.datasets",
    "Federation": "stamen.graphs.federation",
    "FederationSpec": "stamen.graphs.spec",
    "build_federation": "stamen.graphs.federation",
    "DATASETS": "stamen.graphs.names",
    "PARTITIONER_SPECS": "stamen.graphs.names",
    "client_subgraph": "stamen.graphs.partition",
    "client_subgraphs": "stamen.graphs.partition",
    "cut_edges": "stamen.graphs.partition",
    "partition_nodes": "stamen.graphs.partition",
    "split_masks": "stamen.graphs.splits",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'graphs' has no attribute {name!r}")
    return getattr(importlib.import_module(_SOURCES[name]), name)
