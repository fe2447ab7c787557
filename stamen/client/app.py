"""Stamen's ClientApp: the Flower entry point, light to import; the handlers load on the first message.

``train`` evaluates the model it received (the previous round's global model) on
its validation and test nodes, trains locally with the run's algorithm, evaluates
again, and replies with the weights and counts. Folding the global evaluation into
the training reply saves a message round per federated round; ``evaluate`` serves
the one evaluation left after the last round; ``query`` answers certificates,
unlearning and an algorithm's own phases (:mod:`stamen.client.handlers`).

Importing this module costs Flower and the contract only (about 0.4 s), not torch and
PyG (about 5 s): a Flower simulation imports the ClientApp in its driver process before
Ray starts, only to find the app, and that import sits on every run's start-up path.
The processes that serve messages import :mod:`stamen.client.handlers` once, on their first.
"""

from __future__ import annotations

from flwr.app import Context, Message
from flwr.clientapp import ClientApp

from stamen.client.clipping import client_dp_mod
from stamen.client.packing import packed_records_mod
from stamen.client.secagg import secure_aggregation_mod

app = ClientApp()


@app.train(mods=[packed_records_mod, secure_aggregation_mod, client_dp_mod])
def train(message: Message, context: Context) -> Message:
    # on use: torch, torch_geometric, scipy stay out of this module's import
    from stamen.client.handlers import train

    return train(message, context)


@app.evaluate(mods=[packed_records_mod])
def evaluate(message: Message, context: Context) -> Message:
    # on use: torch, torch_geometric, scipy stay out of this module's import
    from stamen.client.handlers import evaluate_received

    return evaluate_received(message, context)


@app.query(mods=[packed_records_mod])
def query(message: Message, context: Context) -> Message:
    # on use: torch, torch_geometric, scipy stay out of this module's import
    from stamen.client.handlers import query

    return query(message, context)
