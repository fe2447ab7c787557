"""The models a run config may use, one registry entry each (free of heavy imports, see :mod:`stamen.graphs.names`).

A model is an encoder the run's head sits on (:mod:`stamen.models.node_classifier`). Its spec says which tasks
train it; a researcher's model names its encoder factory ``module:function``,
``make_encoder(in_dim, hidden, num_layers, dropout) -> (module, embedding_width)``, with ``module(x, edge_index)``
giving each node's embedding, and enters :data:`MODEL_SPECS` through :func:`register_model` from Python or a
package's ``stamen.models`` entry points (:mod:`stamen.common.registry`), as Stamen's own do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stamen.common.registry import BUILT_IN, PYTHON, Registry

# The tasks that train a model on one graph's nodes through node_classifier.build_model (as stamen.contract.tasks
# names them).
NODE_TASKS = ("node-classification", "link-prediction")


@dataclass(frozen=True)
class ModelSpec:
    """One model: its run-config name, help line, the tasks that train it and its encoder factory.

    Attributes:
        encoder: ``module:function`` of a plug-in's encoder factory (see the module docstring); empty for Stamen's
            own, which :func:`stamen.models.node_classifier.build_model` builds itself.
        tasks: the tasks that train it (a plug-in's: node classification and link prediction).
    """

    name: str
    help: str
    encoder: str = ""
    tasks: tuple[str, ...] = NODE_TASKS


def register_model(spec: ModelSpec, *, origin: str = PYTHON) -> ModelSpec:
    """Enter ``spec`` in :data:`MODEL_SPECS`; ValueError in one line when it cannot be one (a plug-in names an
    encoder factory and trains for node classification or link prediction)."""
    if not isinstance(spec, ModelSpec):
        raise ValueError(f"a model plug-in is a stamen.ModelSpec, got {type(spec).__name__}")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", spec.name):
        raise ValueError(f"model name {spec.name!r} must be lower-case letters, digits and - . _")
    if origin != BUILT_IN:
        if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", spec.encoder):
            raise ValueError(f"model {spec.name!r}: encoder must name module:function, got {spec.encoder!r}")
        if not spec.tasks or any(task not in NODE_TASKS for task in spec.tasks):
            raise ValueError(f"model {spec.name!r}: tasks must be among {', '.join(NODE_TASKS)}, got {spec.tasks!r}")
    MODEL_SPECS.add(spec.name, spec, origin)
    return spec


MODEL_SPECS: Registry[ModelSpec] = Registry("model", "stamen.models", register_model)
_GRAPH = "graph-classification"
for _spec in (
    ModelSpec("gcn", "GCN, symmetric-normalised neighbour sums (Kipf and Welling 2017)", tasks=(*NODE_TASKS, _GRAPH)),
    ModelSpec("sgc", "SGC, num-layers propagations then the linear head (Wu et al. 2019)"),
    ModelSpec("sage", "GraphSAGE, a node's own row beside its neighbours' mean (Hamilton et al. 2017)"),
    ModelSpec("gat", "GAT, attention over neighbours (Velickovic et al. 2018)"),
    ModelSpec("appnp", "APPNP, an MLP then personalised-PageRank propagation (Gasteiger et al. 2019)"),
    ModelSpec("mlp", "MLP, no edges used"),
    ModelSpec("gin", "GIN, sum aggregation with an MLP per layer (Xu et al. 2019)", tasks=(_GRAPH,)),
):
    register_model(_spec, origin=BUILT_IN)

# Stamen's own node models, which node_classifier.build_model builds.
MODELS = ("gcn", "sgc", "sage", "gat", "appnp", "mlp")

# Graph classification's models: message passing, then a readout over each graph
# (stamen/tasks/graph_classification/model.py).
GRAPH_MODELS = ("gin", "gcn")


def models_for(task: str) -> tuple[str, ...]:
    """The models that ``task`` trains, in registry order."""
    return tuple(name for name, spec in MODEL_SPECS.items() if task in spec.tasks)


# How link prediction scores an edge from its ends' embeddings (stamen/tasks/link_prediction/model.py).
LINK_DECODERS = {
    "dot": "score(u, v) = <z_u, z_v>, the graph autoencoder's inner product",
    "mlp": "score(u, v) = MLP(z_u * z_v), a hidden layer of the embeddings' width",
}

# Models whose encoder is a parameter-free propagation after per-node layers, so that a
# node's logits depend on its own propagated feature row only: DP-SGD trains these.
DECOUPLED_MODELS = ("sgc", "mlp")

# The architectures whose neural tangent kernel stamen/certify/ntk.py computes (certify-arch).
NTK_ARCHITECTURES = ("gcn", "sgc", "appnp", "graphsage", "gin", "mlp", "gcn_skippc", "gcn_skipalpha")


def check_decoupled(model: str) -> None:
    """ValueError unless DP-SGD can train ``model`` (one of :data:`DECOUPLED_MODELS`)."""
    if model not in DECOUPLED_MODELS:
        raise ValueError(
            f"privacy='dp-sgd' needs a decoupled model (propagate once, then a per-node network); "
            f"model {model!r} is not one; choose one of: {', '.join(DECOUPLED_MODELS)}"
        )


def encoder_has_weights(model: str, num_layers: int) -> bool:
    """Whether ``model``'s encoder has trained weights (sgc propagates only; a one-layer mlp is all head)."""
    return not (model == "sgc" or (model == "mlp" and num_layers == 1))
