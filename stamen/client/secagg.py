"""The client side of secure aggregation: Flower's ``secaggplus_mod`` around Stamen's training.

SecAgg+ (Bell, Bonawitz, Gascón, Lepoint, Raykova, "Secure Single-Server Aggregation
with (Poly)Logarithmic Overhead", ACM CCS 2020; after SecAgg, Bonawitz et al., ACM CCS
2017), as Flower 1.42 implements it in ``flwr.client.mod.secaggplus_mod``. Each training
exchange of a ``secure-aggregation=true`` run is four messages (stages); the mod answers
``setup`` (two key pairs), ``share_keys`` (Shamir shares of its mask seed and first
secret key, encrypted for each neighbour) and ``unmask`` (the shares the server asks
for) itself, and calls the training handler only in ``collect_masked_vectors``. There,
with the client's weight ``r = n / W`` (``n`` training nodes, ``W`` =
``secagg-max-weight``), it replies

    y = [q, Q(q/R * w)] + PRG(b) + sum_{j in N, j < i} PRG(s_ij) - sum_{j in N, j > i} PRG(s_ij)  (mod 2^32)

with ``q = round(r R)``, ``Q`` the stochastic quantisation of ``[-c, c]`` onto ``R``
integer levels, ``b`` the client's mask seed and ``s_ij`` the key it agreed with
neighbour ``j``; every array record of the reply (the plain weights) is emptied.

This module adapts the layout: the mod reads Flower's legacy ``fitres.*`` records, so
:func:`_legacy_layout` adds them to Stamen's reply, with the names and dtypes of the
weights (:data:`stamen.contract.protocol.SECAGG_LAYOUT`) for the server to rebuild its
``ArrayRecord``. The quantisation's random rounding draws from NumPy's global
generator: it is seeded from the run's seed, the round and the partition (same config
and seed, same aggregate), and the generator's state is restored afterwards.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MessageType, MetricRecord, UserConfig
from flwr.client.mod import secaggplus_mod

from stamen.client.mod_types import ClientAppCallable
from stamen.contract import protocol as p
from stamen.contract.tasks import examples

_SEED_BASE = 2_654_435_761  # mixes the run's seed with the round and partition (odd, < 2^32)


def aggregates_securely(run_config: UserConfig) -> bool:
    """Whether the run's training replies go through SecAgg+ (``secure-aggregation=true``)."""
    return bool(run_config.get("secure-aggregation", False))


def secure_aggregation_mod(message: Message, context: Context, call_next: ClientAppCallable) -> Message:
    """SecAgg+ around the training handler when the run sets ``secure-aggregation=true``; else a pass-through."""
    if not aggregates_securely(context.run_config) or message.metadata.message_type != MessageType.TRAIN:
        return call_next(message, context)

    def train(inner: Message, inner_context: Context) -> Message:
        reply = call_next(inner, inner_context)
        _seed_rounding(inner, inner_context)
        run_config = inner_context.run_config
        unit = examples(str(run_config["task"]) if "task" in run_config else None)
        return _legacy_layout(reply, float(run_config.get("secagg-max-weight", 1000.0)), unit)

    saved = np.random.get_state()
    try:
        return secaggplus_mod(message, context, train)
    finally:
        np.random.set_state(saved)


def _seed_rounding(message: Message, context: Context) -> None:
    """Seed NumPy's global generator, which Flower's stochastic rounding draws from."""
    config = message.content.get(p.CONFIG)
    server_round = int(config.get(p.SERVER_ROUND, 0)) if isinstance(config, ConfigRecord) else 0
    seed = int(context.run_config.get("seed", 0))
    partition = int(context.node_config.get("partition-id", 0))
    np.random.seed((seed * _SEED_BASE + server_round * 1_009 + partition) % 2**32)


def _legacy_layout(reply: Message, max_weight: float, unit: str = "nodes") -> Message:
    """Stamen's training reply plus the ``fitres.*`` records ``secaggplus_mod`` reads, and the weights' layout
    (``unit``: what the run's task trains on, for the refusal)."""
    content = reply.content
    arrays = cast(ArrayRecord, content[p.ARRAYS])
    count = int(cast(MetricRecord, content[p.METRICS])[p.NUM_EXAMPLES])
    if count > max_weight:
        raise ValueError(
            f"secure aggregation: this client trains on {count} {unit}, more than secagg-max-weight={max_weight:g} "
            "(its weight would overflow the quantisation); raise secagg-max-weight to the largest client's "
            f"training {unit}"
        )
    content["fitres.parameters"] = ArrayRecord(array_dict=dict(arrays.items()))
    content["fitres.num_examples"] = MetricRecord({"num_examples": count})
    content["fitres.metrics"] = ConfigRecord()
    content["fitres.status"] = ConfigRecord({"code": 0, "message": "Success"})
    content[p.SECAGG_LAYOUT] = ConfigRecord(
        {p.SECAGG_NAMES: list(arrays.keys()), p.SECAGG_DTYPES: [array.dtype for array in arrays.values()]}
    )
    return reply
