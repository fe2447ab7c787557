"""The client side of every algorithm, by run-config name.

Each algorithm is one module with ``USES_GLOBAL_MODEL`` and
``train(model, job, round_config) -> float`` (the mean training loss). An algorithm
whose model or messages differ from a plain weight exchange adds any of these hooks
(the ClientApp uses the default when one is absent):

- ``new_model(job) -> nn.Module``: the model (default: ``job.new_model()``);
- ``receive(model, job, content: RecordDict)``: install what the server sent into the
  model and the client's state (default: load ``content["arrays"]`` if not empty);
- ``reply_records(model, job, server_round) -> dict[str, ArrayRecord]``: the array
  records of the training reply (default: ``{"arrays": the model's state dict}``).
"""

from __future__ import annotations

from types import ModuleType

from client import fedavg, fedlog, fedprox, local

CLIENT_ALGORITHMS: dict[str, ModuleType] = {
    "fedavg": fedavg,
    "fedprox": fedprox,
    "local": local,
    "fedlog": fedlog,
}


def client_algorithm(name: str) -> ModuleType:
    if name not in CLIENT_ALGORITHMS:
        raise ValueError(f"unknown algorithm {name!r}; choose one of: {', '.join(CLIENT_ALGORITHMS)}")
    return CLIENT_ALGORITHMS[name]
