"""The model names a run config may use (free of heavy imports, see :mod:`graphs.names`)."""

MODELS = ("gcn", "sgc", "sage", "gat", "appnp", "mlp")
