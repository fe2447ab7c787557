"""The model names a run config may use (free of heavy imports, see :mod:`graphs.names`)."""

MODELS = ("gcn", "sgc", "sage", "gat", "appnp", "mlp")

# Models whose encoder is a parameter-free propagation after per-node layers, so that a
# node's logits depend on its own propagated feature row only: DP-SGD trains these.
DECOUPLED_MODELS = ("sgc", "mlp")
