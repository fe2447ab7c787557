"""GNN node classifiers with an explicit encoder -> head split.

Attributes load on first use (PEP 562), so ``import stamen.models.names`` stays light.
"""

import importlib
import warnings

# PyG scripts functions with torch.jit at import time; torch 2.13 warns about each: known noise.
warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning)

_SOURCES = {
    "MODELS": "stamen.models.names",
    "NodeClassifier": "stamen.models.node_classifier",
    "build_model": "stamen.models.node_classifier",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'models' has no attribute {name!r}")
    return getattr(importlib.import_module(_SOURCES[name]), name)
