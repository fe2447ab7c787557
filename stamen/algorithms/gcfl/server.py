r"""GCFL server: clusters of clients, one model per cluster, a cluster split in two when its clients disagree.

Xie, Ma, Yang, Wei and Dai, *Federated Graph Classification over Non-IID Graphs*, NeurIPS 2021
(code: github.com/Oxfordblue7/GCFL), after Sattler et al.'s clustered FL. The server starts with
one cluster of every client. In round :math:`t` client :math:`i` of cluster :math:`C` receives
:math:`C`'s model :math:`\boldsymbol{\theta}_C`, trains, and replies :math:`\boldsymbol{\theta}_i`;
its update is :math:`\Delta_i = \boldsymbol{\theta}_i - \boldsymbol{\theta}_C` (what the server
sent it). A cluster whose every client replied is split when it is near a stationary point of
the clients' joint objective while some client is still far from its own,

.. math:: \Big\lVert \frac{1}{|C|} \sum_{i \in C} \Delta_i \Big\rVert < \varepsilon_1, \qquad
   \max_{i \in C} \lVert \Delta_i \rVert > \varepsilon_2, \qquad |C| > 2, \qquad t > t_0,

into the two sides of the minimum cut of its clients' similarity graph
(:func:`stamen.algorithms.gcfl.cluster_split.min_cut`):

- GCFL (``gcfl-sequence-length=0``): :math:`S_{ij} = \cos(\Delta_i, \Delta_j) + 1`;
- GCFL+ (``gcfl-sequence-length=L > 0``): each client's sequence of update norms
  :math:`\lVert \Delta_i \rVert` over the rounds; a split also needs every client's sequence to
  have :math:`L` entries, compares the last :math:`L` of them by DTW distance :math:`D`
  (:func:`stamen.algorithms.gcfl.cluster_split.dtw_distance`), :math:`S = \max D - D`, and starts every sequence anew.

Then each cluster's model is the average of its clients' weights, weighted by their training
graphs (with every client of a cluster sent the same model, the authors' "model plus the weighted
mean update"), summed as FedAvg sums (:func:`stamen.server.averaging.average_records`: in partition
order, in the weights' dtype), so that until a cluster first splits GCFL's model is FedAvg's to the
bit and so are its rows. It goes to the cluster's clients in the next round and the final evaluation
(:class:`stamen.server.per_node.PerNodeContent`): the run's ``global_*`` figures are each client's on its
cluster's model, as a personalised algorithm's are. The global model the round loop keeps (and
``model.pt``) is FedAvg's average over every client.

Every round's row holds the clusters after its aggregation (``clusters``, lists of partition ids) and
the round of a split its :class:`Split` (``cluster_splits``: the cluster, its two ``parts``, the norms
against ``eps1`` and ``eps2`` that made it, GCFL+'s norm sequences and DTW distances); ``summary.json``
holds the final ``clusters`` and every split, and ``run.log`` a line per split.

Clients are known by partition id, replies are read in partition order, and ties in the cut
go to the lowest id: the same config and seed give the same clusters on every engine.

Defaults (the authors' ``main_oneDS.py``): :math:`\varepsilon_1 = 0.05`, :math:`\varepsilon_2 = 0.1`,
:math:`t_0 = 20` (``c_round > 20``), :math:`L = 5` for GCFL+. Differences: the whole model is a
cluster's (the authors' share the GIN layers and keep each client's input projection and head; Stamen's
graph classifier is GIN layers and one linear head, and a cluster of like clients gains from a shared
head), and the updates the splits read are the whole model's (``gcfl-measure='model'``);
``gcfl-measure='layers'`` reads the message-passing layers' only, as the authors' server does (its
``compute_max_update_norm``, ``compute_mean_update_norm`` and ``compute_pairwise_similarities`` go over
the keys of its ``serverGIN``, the GIN layers); GCFL+'s
sequences are of the update norms (the authors' ``run_gcflplus_dWs``; their ``run_gcflplus`` uses
the last step's gradient norm, which the server never sees). Round 1 gives no update (the clients
start from the seeded model, which the server does not send), so clustering starts in round 2. A
client first heard from after a split joins the first cluster. The clusters are server state
outside the checkpoint: GCFL is not resumable (its spec says so).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from stamen.algorithms.gcfl import GCFLMeasure
from stamen.algorithms.gcfl.cluster_split import cosine_similarities, dtw_matrix, min_cut
from stamen.contract import protocol as p
from stamen.contract.arrays import array_values
from stamen.contract.figures import CLUSTER_SPLITS, CLUSTERS
from stamen.contract.run_config import RunConfig
from stamen.server.averaging import average_records
from stamen.server.per_node import PerNodeContent
from stamen.server.personalised import weighted_average
from stamen.server.rows import RowFigures
from stamen.server.strategy_options import strategy_options

log = logging.getLogger(__name__)
LAYERS = "layers."  # the graph classifier's message-passing layers (stamen.tasks.graph_classification.model)


@dataclass(frozen=True)
class Split:
    """One split: in ``round``, ``cluster`` (partition ids) became ``first`` and ``second``, and why.

    ``mean_update_norm`` (the norm of the cluster's mean update) was below ``eps1`` and ``max_update_norm``
    (its largest client update norm) above ``eps2``; ``update_norms`` are its clients' update norms (in
    ``cluster``'s order) and ``cut_weight`` the weight of the least cut of their similarities. GCFL+
    (``sequence_length > 0``) also keeps each client's last ``sequence_length`` update norms (``sequences``)
    and their pairwise DTW distances (``dtw_distances``), the similarities' source.
    """

    round: int
    cluster: tuple[int, ...]
    first: tuple[int, ...]
    second: tuple[int, ...]
    mean_update_norm: float
    max_update_norm: float
    eps1: float
    eps2: float
    update_norms: tuple[float, ...]
    cut_weight: float
    sequence_length: int = 0
    sequences: tuple[tuple[float, ...], ...] = ()
    dtw_distances: tuple[tuple[float, ...], ...] = ()

    def row(self) -> dict[str, Any]:
        """The JSON form in a row's ``cluster_splits`` and the summary's (clients by partition id)."""
        event: dict[str, Any] = {
            "round": self.round,
            "cluster": list(self.cluster),
            "parts": [list(self.first), list(self.second)],
            "mean_update_norm": self.mean_update_norm,
            "eps1": self.eps1,
            "max_update_norm": self.max_update_norm,
            "eps2": self.eps2,
            "update_norms": {str(i): norm for i, norm in zip(self.cluster, self.update_norms, strict=True)},
            "cut_weight": self.cut_weight,
        }
        if self.sequence_length:
            event["sequence_length"] = self.sequence_length
            event["norm_sequences"] = {str(i): list(s) for i, s in zip(self.cluster, self.sequences, strict=True)}
            event["dtw_distances"] = [list(row) for row in self.dtw_distances]
        return event

    def line(self) -> str:
        """The split in words, for the run's log."""
        why = (
            f"mean update norm {self.mean_update_norm:.4g} < eps1 {self.eps1:g}, "
            f"max update norm {self.max_update_norm:.4g} > eps2 {self.eps2:g}"
        )
        if self.sequence_length:
            why += f", cut by DTW over the last {self.sequence_length} update norms"
        return (
            f"gcfl: round {self.round} split clients {list(self.cluster)} into {list(self.first)} and "
            f"{list(self.second)} ({why}; cut weight {self.cut_weight:.4g})"
        )


class GCFL(PerNodeContent, RowFigures):
    """Clustered FedAvg with GCFL's splits (see the module docstring).

    Args:
        eps1: a cluster's mean update norm must be below it to split.
        eps2: its largest client update norm must be above it.
        warmup_rounds: no split in rounds ``<= warmup_rounds``.
        sequence_length: 0 plain GCFL; ``L > 0`` GCFL+ over the last ``L`` update norms.
        measure: the weights an update covers (``gcfl-measure``): every weight, or the message-passing layers'.
        **strategy: Flower FedAvg's arguments.
    """

    def __init__(
        self, eps1: float, eps2: float, warmup_rounds: int, sequence_length: int, measure: str = "model", **strategy
    ) -> None:
        super().__init__(**strategy)
        self.eps1, self.eps2, self.measure = eps1, eps2, GCFLMeasure(measure)
        self.warmup_rounds, self.sequence_length = warmup_rounds, sequence_length
        self.clusters: list[tuple[int, ...]] = []  # partition ids, each cluster sorted; empty before round 1
        self.splits: list[Split] = []
        self.models: dict[int, ArrayRecord] = {}  # partition id -> its cluster's model
        self.partitions: dict[int, int] = {}  # node id -> partition id
        self.sent: dict[int, ArrayRecord] = {}  # node id -> the weights of its latest training message
        self.sequences: dict[int, list[float]] = {}  # partition id -> its update norms (GCFL+)

    def attach(self, messages: Iterable[Message]) -> list[Message]:
        messages = list(messages)
        for message in messages:
            partition = self.partitions.get(message.metadata.dst_node_id)
            if partition in self.models:
                content = RecordDict(dict(message.content.items()))  # its own content, not the shared one
                content[p.ARRAYS] = self.models[partition]
                message.content = content
        return messages

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        messages = list(super().configure_train(server_round, arrays, config, grid))
        for message in messages:
            self.sent[message.metadata.dst_node_id] = message.content[p.ARRAYS]
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        valid = [reply for reply in replies if not reply.has_error()]
        if not valid:
            return None, None
        valid.sort(key=lambda reply: int(reply.content[p.METRICS][p.PARTITION_ID]))
        ids = [int(reply.content[p.METRICS][p.PARTITION_ID]) for reply in valid]
        for reply, partition in zip(valid, ids, strict=True):
            self.partitions[reply.metadata.src_node_id] = partition
        self._admit(ids)
        contents = [reply.content for reply in valid]
        records = [content[p.ARRAYS] for content in contents]
        examples = np.array([float(content[p.METRICS][p.NUM_EXAMPLES]) for content in contents])
        updates = self._updates(valid, records)
        if updates is not None:
            self._split(server_round, ids, updates)
        overall = average_records(contents, self.weighted_by_key)  # FedAvg's, to the bit
        for cluster in self.clusters:
            members = [k for k, partition in enumerate(ids) if partition in cluster]
            if not members:
                continue
            if len(members) == len(contents):
                model = overall
            elif examples[members].sum() > 0:
                model = average_records([contents[k] for k in members], self.weighted_by_key)
            else:  # no training graphs in the cluster: its clients weigh alike
                model = weighted_average([records[k] for k in members], np.full(len(members), 1 / len(members)))
            self.models.update({partition: model for partition in cluster})
        return overall, None

    def _admit(self, ids: list[int]) -> None:
        """The first replies make the one cluster; a client first heard from later joins the first cluster."""
        if not self.clusters:
            self.clusters = [tuple(ids)]
            return
        known = {partition for cluster in self.clusters for partition in cluster}
        new = [partition for partition in ids if partition not in known]
        if new:
            self.clusters[0] = tuple(sorted((*self.clusters[0], *new)))

    def _updates(self, replies: list[Message], records: list[ArrayRecord]) -> np.ndarray | None:
        """Each reply's update from what it was sent, flattened (rows in reply order); None when a client was
        sent no weights (round 1: the seeded model)."""
        rows = []
        for reply, record in zip(replies, records, strict=True):
            sent = self.sent.get(reply.metadata.src_node_id)
            if sent is None or len(sent) == 0:
                return None
            names = [name for name in record if self._measured(name)]
            if not names:
                raise ValueError("gcfl-measure='layers': the model has no 'layers.*' weights; use gcfl-measure='model'")
            rows.append(np.concatenate([_delta(record[name], sent[name]) for name in names]))
        return np.stack(rows)

    def _measured(self, name: str) -> bool:
        """Whether weight ``name`` is in the updates the splits read: with ``measure='layers'`` only the
        message-passing layers' (the graph classifier's ``layers.*``, not its ``head``)."""
        return self.measure == GCFLMeasure.MODEL or name.startswith(LAYERS)

    def _split(self, server_round: int, ids: list[int], updates: np.ndarray) -> None:
        norms = np.linalg.norm(updates, axis=1)
        if self.sequence_length:
            for partition, norm in zip(ids, norms, strict=True):
                self.sequences.setdefault(partition, []).append(float(norm))
        replied = set(ids)
        clusters = []
        for cluster in self.clusters:
            members = [k for k, partition in enumerate(ids) if partition in cluster]  # in cluster's order
            split = self._split_of(server_round, cluster, replied, updates[members], norms[members])
            if split is None:
                clusters.append(cluster)
                continue
            clusters.extend((split.first, split.second))
            self.splits.append(split)
            log.info("%s", split.line())
            if self.sequence_length:
                self.sequences = {}
        self.clusters = clusters

    def _split_of(
        self, server_round: int, cluster: tuple[int, ...], replied: set[int], updates: np.ndarray, norms: np.ndarray
    ) -> Split | None:
        """The split of ``cluster`` this round (None: it stays whole)."""
        if server_round <= self.warmup_rounds or len(cluster) <= 2 or not replied.issuperset(cluster):
            return None
        if self.sequence_length and any(len(self.sequences.get(i, ())) < self.sequence_length for i in cluster):
            return None
        mean_norm, max_norm = float(np.linalg.norm(updates.mean(axis=0))), float(norms.max())
        if not (mean_norm < self.eps1 and max_norm > self.eps2):
            return None
        sequences, distances = (), np.zeros((0, 0))
        if self.sequence_length:
            sequences = tuple(tuple(self.sequences[i][-self.sequence_length :]) for i in cluster)
            distances = dtw_matrix([list(sequence) for sequence in sequences])
            similarity = distances.max() - distances
        else:
            similarity = cosine_similarities(updates)
        first, second = min_cut(similarity)
        return Split(
            round=server_round,
            cluster=cluster,
            first=tuple(cluster[i] for i in first),
            second=tuple(cluster[i] for i in second),
            mean_update_norm=mean_norm,
            max_update_norm=max_norm,
            eps1=self.eps1,
            eps2=self.eps2,
            update_norms=tuple(float(norm) for norm in norms),
            cut_weight=float(similarity[np.ix_(first, second)].sum()),
            sequence_length=self.sequence_length,
            sequences=sequences,
            dtw_distances=tuple(tuple(float(d) for d in row) for row in distances),
        )

    def row_figures(self, server_round: int) -> dict[str, Any]:
        """The round's row: the clusters after its aggregation, and the splits it made (if any)."""
        figures: dict[str, Any] = {CLUSTERS: [list(cluster) for cluster in self.clusters]}
        splits = [split.row() for split in self.splits if split.round == server_round]
        if splits:
            figures[CLUSTER_SPLITS] = splits
        return figures


def _delta(new, old) -> np.ndarray:
    """``new - old`` of one array, flattened, in float64 (an integer array, e.g. a counter, gives nothing)."""
    a, b = array_values(new, writable=False), array_values(old, writable=False)
    if not np.issubdtype(a.dtype, np.floating):
        return np.zeros(0)
    return (a.astype(np.float64) - b.astype(np.float64)).reshape(-1)


def make_strategy(config: RunConfig) -> Strategy:
    return GCFL(
        eps1=config.option("gcfl-eps1"),
        eps2=config.option("gcfl-eps2"),
        warmup_rounds=config.option("gcfl-warmup-rounds"),
        sequence_length=config.option("gcfl-sequence-length"),
        measure=config.option("gcfl-measure"),
        **strategy_options(config),
    )
