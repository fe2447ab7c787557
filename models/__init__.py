"""GNN node classifiers with an explicit encoder -> head split."""

from models.node_classifier import MODELS, NodeClassifier, build_model

__all__ = ["MODELS", "NodeClassifier", "build_model"]
