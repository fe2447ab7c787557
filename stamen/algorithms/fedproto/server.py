r"""FedProto server: averages the clients' class prototypes, weighted by their class counts.

FedProto (Tan, Long, Liu, Zhou, Lu, Jiang, Zhang: *FedProto: Federated Prototype Learning
across Heterogeneous Clients*, AAAI 2022). Client :math:`i` sends its prototype
:math:`C_i^{(j)}` and training-node count :math:`n_{i,j}` per class :math:`j`
(:data:`stamen.contract.protocol.FEDPROTO_UPLOAD`; :mod:`stamen.algorithms.fedproto.client`); the global prototype is
their count-weighted mean

.. math::
    \bar C^{(j)} = \frac{\sum_i n_{i,j}\, C_i^{(j)}}{\sum_i n_{i,j}}, \qquad \bar n_j = \sum_i n_{i,j},

over the clients that replied this round (:func:`average_prototypes`; a class no client holds
gets a zero prototype and count 0, which clients ignore). The paper's Eq. for
:math:`\bar C^{(j)}` carries an extra factor :math:`1/|\mathcal N_j|`; the count-weighted mean is
used here (it is the mean embedding of the class over all clients' training nodes).

No weights are aggregated: ``aggregate_train`` returns an empty ``arrays`` record (the round
loop sends it on, clients ignore it, no ``model.pt`` is written) and keeps the global
prototypes, which every later training message and the final evaluation carry
(:data:`stamen.contract.protocol.FEDPROTO_GLOBAL`). A reply whose upload is missing or does not
match the others' shapes is left out of the average, with a warning.
"""

from __future__ import annotations

from collections.abc import Iterable
from logging import WARNING

import numpy as np
from flwr.app import Array, ArrayRecord, Message, MetricRecord, RecordDict
from flwr.common import log
from flwr.serverapp.strategy import Strategy

from stamen.algorithms.fedproto import messages as wire
from stamen.contract.run_config import RunConfig
from stamen.server.per_node import PerNodeContent
from stamen.server.strategy_options import strategy_options


def average_prototypes(prototypes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Count-weighted mean per class of ``prototypes`` ``(clients, classes, dim)`` with ``counts``
    ``(clients, classes)``; returns ``(classes, dim)`` prototypes and ``(classes,)`` total counts."""
    if prototypes.ndim != 3 or counts.shape != prototypes.shape[:2]:
        raise ValueError(f"prototypes {prototypes.shape} and counts {counts.shape} do not match")
    if (counts < 0).any():
        raise ValueError("class counts must be non-negative")
    weights = counts.astype(np.float64)
    totals = weights.sum(axis=0)
    sums = np.einsum("kc,kcd->cd", weights, prototypes.astype(np.float64))
    averaged = np.divide(sums, totals[:, None], out=np.zeros_like(sums), where=totals[:, None] > 0)
    return averaged.astype(np.float32), totals.astype(np.int64)


def _upload(content: RecordDict) -> tuple[np.ndarray, np.ndarray] | None:
    record = content.get(wire.FEDPROTO_UPLOAD)
    if not isinstance(record, ArrayRecord) or wire.PROTOTYPES not in record or wire.PROTOTYPE_COUNTS not in record:
        return None
    prototypes, counts = record[wire.PROTOTYPES].numpy(), record[wire.PROTOTYPE_COUNTS].numpy()
    if prototypes.ndim != 2 or counts.shape != prototypes.shape[:1] or not np.isfinite(prototypes).all():
        return None
    return prototypes, counts


class FedProto(PerNodeContent):
    """Flower's FedAvg for sampling and messages; prototypes instead of weights (module docstring).

    Args:
        **strategy: Flower FedAvg's arguments.
    """

    def __init__(self, **strategy) -> None:
        super().__init__(**strategy)
        self.global_prototypes: ArrayRecord | None = None

    def attach(self, messages: Iterable[Message]) -> list[Message]:
        messages = list(messages)
        for message in messages:
            content = RecordDict(dict(message.content.items()))  # FedAvg shares one RecordDict among messages
            if self.global_prototypes is not None:
                content[wire.FEDPROTO_GLOBAL] = self.global_prototypes
            message.content = content
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        uploads = []
        for reply in replies:
            if reply.has_error():
                continue
            upload = _upload(reply.content)
            if upload is None:
                log(WARNING, "fedproto round %d: node %d sent no valid %r record; left out of the prototypes",
                    server_round, reply.metadata.src_node_id, wire.FEDPROTO_UPLOAD)  # fmt: skip
                continue
            uploads.append((reply.metadata.src_node_id, upload))
        shapes = [(upload[0].shape, upload[1].shape) for _, upload in uploads]
        common = max(set(shapes), key=shapes.count) if shapes else None
        for node, upload in uploads:
            if (upload[0].shape, upload[1].shape) != common:
                log(WARNING, "fedproto round %d: node %d's prototypes %s differ from most replies' %s; left out",
                    server_round, node, upload[0].shape, common[0])  # fmt: skip
        kept = [upload for _, upload in uploads if (upload[0].shape, upload[1].shape) == common]
        if not kept:
            return None, None
        prototypes, counts = average_prototypes(np.stack([u[0] for u in kept]), np.stack([u[1] for u in kept]))
        self.global_prototypes = ArrayRecord({wire.PROTOTYPES: Array(prototypes), wire.PROTOTYPE_COUNTS: Array(counts)})
        return ArrayRecord(), None


def make_strategy(config: RunConfig) -> Strategy:
    return FedProto(**strategy_options(config))
