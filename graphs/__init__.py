"""Graph data in, client subgraphs out: datasets, partitioners, splits.

Attributes load on first use (PEP 562), so ``import graphs.names`` stays light.
"""

import importlib
import warnings

# PyG scripts functions with torch.jit at import time; torch 2.13 warns about each: known noise.
warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning)

_SOURCES = {
    "make_csbm": "graphs.csbm",
    "make_paper_csbm": "graphs.csbm",
    "sample_csbm": "graphs.csbm",
    "load_dataset": "graphs.datasets",
    "Federation": "graphs.federation",
    "FederationSpec": "graphs.spec",
    "build_federation": "graphs.federation",
    "DATASETS": "graphs.names",
    "PARTITIONERS": "graphs.names",
    "client_subgraph": "graphs.partition",
    "client_subgraphs": "graphs.partition",
    "cut_edges": "graphs.partition",
    "partition_nodes": "graphs.partition",
    "split_masks": "graphs.splits",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'graphs' has no attribute {name!r}")
    return getattr(importlib.import_module(_SOURCES[name]), name)
