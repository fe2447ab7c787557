"""FedLoG server: FedAvg of the model weights plus global synthetic-data condensation.

Each round the strategy averages the clients' shared weights (encoder, LayerNorms,
warm-up classifier; weighted by training nodes) and condenses their head-branch
synthetic nodes into global ones with class-share weights
(:mod:`stamen.algorithms.fedlog.condensation`). The first time a client trains it also uploads its
neighbour generator; the server keeps each client's generator and class counts and
averages them into one generator per class. Every later message (training and the
final evaluation) carries the weights and the global synthetic nodes and labels. The
per-class generators (most of the payload: an MLP per class) change only when a client
uploads a new one, so a node gets them only while it has not yet confirmed the
current ones by a successful training reply; clients keep them in their state. No
real node feature or label reaches the server.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from flwr.app import Array, ArrayRecord, Message, MetricRecord, RecordDict
from flwr.serverapp.strategy import Strategy

from stamen.algorithms.fedlog import messages as wire
from stamen.algorithms.fedlog.condensation import class_weights, condense, per_class_average
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.server.averaging import average_records
from stamen.server.per_node import PerNodeContent
from stamen.server.strategy_options import strategy_options


class FedLoG(PerNodeContent):
    """Flower's FedAvg with FedLoG's condensation and generator aggregation.

    Args:
        num_proto: synthetic nodes per class.
        seed: seed of the slot permutations.
        **strategy: Flower FedAvg's arguments.
    """

    def __init__(self, num_proto: int, seed: int, **strategy) -> None:
        super().__init__(**strategy)
        self.num_proto = num_proto
        self.rng = np.random.default_rng(seed)
        self.global_synthetic: ArrayRecord | None = None
        self.generators: ArrayRecord | None = None
        self.generators_version = 0
        self.client_generators: dict[int, dict[str, np.ndarray]] = {}
        self.client_counts: dict[int, np.ndarray] = {}
        self.node_versions: dict[int, int] = {}  # node id -> generators version it confirmed holding
        self.sent_versions: dict[int, int] = {}  # node id -> generators version in its pending message

    def attach(self, messages: Iterable[Message]) -> list[Message]:
        messages = list(messages)
        for message in messages:
            # FedAvg gives every message of a round the same RecordDict: each gets its own
            # (sharing the records), as what a message carries now depends on its node.
            content = RecordDict(dict(message.content.items()))
            if self.global_synthetic is not None:
                content[wire.FEDLOG_GLOBAL] = self.global_synthetic
            node = message.metadata.dst_node_id
            if self.generators is not None and self.node_versions.get(node) != self.generators_version:
                content[wire.FEDLOG_GENERATORS] = self.generators
                self.sent_versions[node] = self.generators_version
            message.content = content
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        replies = [reply for reply in replies if not reply.has_error()]
        for reply in replies:
            node = reply.metadata.src_node_id
            if node in self.sent_versions:
                self.node_versions[node] = self.sent_versions.pop(node)
        contents = [reply.content for reply in replies]
        if not contents:
            return None, None
        arrays = average_records(
            [RecordDict({p.ARRAYS: c[p.ARRAYS], p.METRICS: c[p.METRICS]}) for c in contents], p.NUM_EXAMPLES
        )
        counts = np.stack(
            [
                c[wire.FEDLOG_UPLOAD][wire.CLASS_PROPORTIONS].numpy() * float(c[p.METRICS][p.NUM_EXAMPLES])
                for c in contents
            ]
        )
        synthetic = np.stack([c[wire.FEDLOG_UPLOAD][wire.SYNTHETIC_HEAD].numpy() for c in contents])
        num_clients, rows, features = synthetic.shape
        synthetic = synthetic.reshape(num_clients, rows // self.num_proto, self.num_proto, features)
        permutations = np.stack([self.rng.permutation(self.num_proto) for _ in range(num_clients)])
        features_g = condense(synthetic, class_weights(counts), permutations).reshape(rows, features)
        labels = np.repeat(np.arange(rows // self.num_proto), self.num_proto)
        self.global_synthetic = ArrayRecord(
            {wire.GLOBAL_FEATURES: Array(features_g.astype(np.float32)), wire.GLOBAL_LABELS: Array(labels)}
        )
        self._update_generators(contents, counts)
        return arrays, None

    def _update_generators(self, contents: list[RecordDict], counts: np.ndarray) -> None:
        """Keep each client's generator and class counts; when a new generator came, average them per class."""
        uploaded = False
        for content, client_counts in zip(contents, counts):
            client = int(content[p.METRICS][p.PARTITION_ID])
            self.client_counts[client] = client_counts
            if wire.FEDLOG_GENERATOR in content:
                record = content[wire.FEDLOG_GENERATOR]
                self.client_generators[client] = {name: record[name].numpy() for name in record}
                uploaded = True
        clients = sorted(self.client_generators)
        if not uploaded or not clients:
            return
        self.generators_version += 1
        weights = class_weights(np.stack([self.client_counts[c] for c in clients]))
        averaged = per_class_average([self.client_generators[c] for c in clients], weights)
        self.generators = ArrayRecord({k: Array(v.astype(np.float32)) for k, v in averaged.items()})


def make_strategy(config: RunConfig) -> Strategy:
    return FedLoG(
        num_proto=config.option("fedlog-num-proto"),
        seed=config.seed,
        **strategy_options(config),
    )
