"""Link prediction's client part (its spec: :mod:`stamen.tasks.link_prediction`): the model, the local step, the
figures, the data check.

The client splits its own edges (:func:`stamen.graphs.link_splits.split_links`, seeded by the run's
seed and its partition id), trains the run's model with a decoder
(:mod:`stamen.tasks.link_prediction.model`) on its training edges against sampled non-edges
(:func:`stamen.tasks.link_prediction.training.fit_links`) and scores a model on its validation and test
edges, each against as many fixed non-edges: AUC, average precision and Hits@K
(``hits-k``). It also scores the cut edges assigned to it (:func:`stamen.graphs.link_splits.cut_links`)
on the whole graph's nodes with the union of the clients' training edges, which it reads
from the federation as the new-client setting does; a client holding only its exported
partition (a deployment's host) has no whole graph and reports no cut figures.

Splits and the cut edges are computed once per process and kept, as the client's subgraph is.
"""

from __future__ import annotations

import functools
import math

import torch
from torch_geometric.data import Data

from stamen.client.job import LocalJob
from stamen.client.tasks import ClientTask
from stamen.contract import protocol as p
from stamen.contract.figures import LINK_METRICS
from stamen.contract.run_config import RunConfig
from stamen.graphs import FederationSpec, build_federation
from stamen.graphs.federation import Federation
from stamen.graphs.link_splits import CutLinks, LinkSplit, cut_links, split_links
from stamen.graphs.node_data import load_partition
from stamen.tasks.link_prediction.metrics import LinkFigures
from stamen.tasks.link_prediction.model import LinkPredictor, build_link_predictor
from stamen.tasks.link_prediction.training import fit_links, score_links

_SPLITS: dict[tuple, tuple[Data, LinkSplit]] = {}  # by seed, client, fractions and data object


class LinkPredictionTask(ClientTask):
    """See the module docstring."""

    def initial_model(self, job: LocalJob) -> tuple[LinkPredictor, dict[str, torch.Tensor]]:
        c = job.config
        return _initial_model(
            c.model,
            job.data.num_features,
            c.hidden,
            c.num_layers,
            c.dropout,
            c.link_decoder,
            c.seed_of(c.model_seed),
            job.device,
        )

    def fit(self, model: torch.nn.Module, job: LocalJob, optimizer: torch.optim.Optimizer, proximal_mu: float) -> float:
        split = self.split(job)
        return fit_links(
            model, job.data.x, split.message_edges, split.train, job.config.local_epochs, optimizer, proximal_mu
        )  # type: ignore[arg-type]

    def figures(self, model: torch.nn.Module, job: LocalJob, which: str) -> dict[str, float]:
        split, k = self.split(job), job.config.hits_k
        val, test = score_links(
            model, job.data.x, split.message_edges, [(split.val, split.val_neg), (split.test, split.test_neg)], k
        )  # type: ignore[arg-type]
        found = {**_entries(which, "val", val), **_entries(which, "test", test)}
        cut, scored = self.cut(job), None
        if cut is not None:
            x, links = cut
            (scored,) = score_links(model, x, links.message_edges, [(links.edges, links.non_edges)], k)  # type: ignore[arg-type]
        return {**found, **_entries(which, "cut", scored)}

    def sizes(self, job: LocalJob) -> dict[str, int]:
        split, cut = self.split(job), self.cut(job)
        return {
            p.NUM_EXAMPLES: int(split.train.size(1)),
            p.NUM_VAL: int(split.val.size(1)),
            p.NUM_TEST: int(split.test.size(1)),
            p.NUM_CUT: 0 if cut is None else int(cut[1].edges.size(1)),
        }

    def check_data(self, config: RunConfig, federation: Federation) -> None:
        """Edges to train on in every client (ValueError in one line naming the client)."""
        for index, client in enumerate(federation.clients):
            if link_split(client, config, index).train.size(1) == 0:
                raise ValueError(
                    f"client {index} has no edges to train link prediction on ({int(client.edge_index.size(1)) // 2} "
                    f"edges, link-val-frac={config.link_val_frac:g}, link-test-frac={config.link_test_frac:g}); "
                    "use fewer clients, a graph with more edges or lower link-val-frac and link-test-frac"
                )

    def split(self, job: LocalJob) -> LinkSplit:
        """The client's split of its own edges (on its device), computed once per process."""
        c = job.config
        key = (c.seed_of(c.partition_seed), job.partition_id, c.link_val_frac, c.link_test_frac, id(job.data))
        cached = _SPLITS.get(key)
        if cached is None or cached[0] is not job.data:  # the data object is held: its id stays its own
            split = link_split(job.data, c, job.partition_id)
            cached = _SPLITS[key] = (job.data, split.to(job.device))
        return cached[1]

    def cut(self, job: LocalJob) -> tuple[torch.Tensor, CutLinks] | None:
        """The whole graph's features and the client's cut edges (None without the whole graph)."""
        if job.spec is None:
            return None
        c = job.config
        return _cut(job.spec, job.partition_id, c.link_val_frac, c.link_test_frac, job.device)


def _seed(seed: int, partition_id: int) -> int:
    return seed * 100_003 + partition_id + 7_919  # not the node split's seed of the same client


def link_split(data: Data, config: RunConfig, partition_id: int) -> LinkSplit:
    """Client ``partition_id``'s split of its edges ``data`` into training, validation and test edges."""
    seed = _seed(config.seed_of(config.partition_seed), partition_id)
    return _split(data, config.link_val_frac, config.link_test_frac, seed)


def _split(data: Data, val_frac: float, test_frac: float, seed: int) -> LinkSplit:
    return split_links(data.edge_index.cpu(), int(data.num_nodes), val_frac, test_frac, seed)


@functools.lru_cache(maxsize=16)
def _cut(
    spec: FederationSpec, partition_id: int, val_frac: float, test_frac: float, device: torch.device
) -> tuple[torch.Tensor, CutLinks] | None:
    if load_partition(spec, partition_id) is not None:  # an exported partition: no whole graph here
        return None
    federation = build_federation(spec)
    splits = [
        _split(client, val_frac, test_frac, _seed(spec.seed, index)) for index, client in enumerate(federation.clients)
    ]
    links = cut_links(
        federation.graph.edge_index, federation.parts[: spec.num_clients], splits, partition_id, spec.seed
    )
    return federation.graph.x.to(device), links.to(device)


def _entries(which: str, edges: str, figures: LinkFigures | None) -> dict[str, float]:
    """METRICS entries of ``figures``; NaN where a figure is not defined (no edges of the set, or no whole graph):
    every client replies the same keys, and the server pools only the defined figures (stamen/server/rows.py)."""
    values = {} if figures is None else {"auc": figures.auc, "ap": figures.ap, "hits": figures.hits}
    return {
        p.link_key(which, edges, name): math.nan if (value := values.get(name)) is None else value
        for name in LINK_METRICS
    }


@functools.lru_cache(maxsize=8)
def _initial_model(
    name: str, in_dim: int, hidden: int, num_layers: int, dropout: float, decoder: str, seed: int, device: torch.device
) -> tuple[LinkPredictor, dict[str, torch.Tensor]]:
    torch.manual_seed(seed)
    model = build_link_predictor(name, in_dim, hidden, num_layers, dropout, decoder).to(device)
    return model, {key: value.detach().clone() for key, value in model.state_dict().items()}


PART = LinkPredictionTask()
