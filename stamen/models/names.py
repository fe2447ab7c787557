"""The model names a run config may use (free of heavy imports, see :mod:`stamen.graphs.names`)."""

MODELS = ("gcn", "sgc", "sage", "gat", "appnp", "mlp")

# Graph classification's models: message passing, then a readout over each graph (stamen/models/graph_classifier.py).
GRAPH_MODELS = ("gin", "gcn")

# Every model a run config may name (which task trains which: stamen/contract/tasks.py).
ALL_MODELS = (*MODELS, *(name for name in GRAPH_MODELS if name not in MODELS))

# How link prediction scores an edge from its ends' embeddings (stamen/models/link_predictor.py).
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
