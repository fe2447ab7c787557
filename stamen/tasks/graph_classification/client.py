"""Graph classification's client part (its spec: :mod:`stamen.tasks.graph_classification`): the model, the local
step, the figures, DP-SGD, the data check.

The client holds a set of small graphs (:mod:`stamen.graphs.graph_federation`: one batch of its graphs
with graph-level train/validation/test masks), trains the run's graph classifier
(:mod:`stamen.tasks.graph_classification.model`) on its training graphs in mini-batches of ``graph-batch-size``
(:func:`stamen.tasks.graph_classification.training.fit_graphs`) and scores a model by the number of its validation
and test graphs classified right. It replies node classification's counts, over graphs
(:mod:`stamen.contract.protocol`), so the server's rows, summary, table and curves show accuracies
over graphs under the usual names. With ``privacy='dp-sgd'`` the local step is per-graph DP-SGD
(:func:`stamen.tasks.graph_classification.dp_sgd.train_private_graphs`): each training graph is one record.

A client's graphs are unbatched once per process and kept, as its batch is.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import torch
from torch_geometric.data import Batch, Data

from stamen.client.job import LocalJob
from stamen.client.privacy import PrivateTraining
from stamen.client.tasks import ClientTask, check_classes
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.graphs.federation import Federation
from stamen.tasks.graph_classification.dp_sgd import train_private_graphs
from stamen.tasks.graph_classification.model import GraphClassifier, build_graph_classifier
from stamen.tasks.graph_classification.training import correct_graphs, fit_graphs

if TYPE_CHECKING:
    from opacus.accountants import RDPAccountant

_COUNTS = {
    "global": (p.GLOBAL_VAL_CORRECT, p.GLOBAL_TEST_CORRECT),
    "local": (p.LOCAL_VAL_CORRECT, p.LOCAL_TEST_CORRECT),
}
_SETS: dict[int, tuple[Data, tuple[list[Data], list[Data], list[Data]]]] = {}  # by data object


class GraphClassificationTask(ClientTask):
    """See the module docstring."""

    def initial_model(self, job: LocalJob) -> tuple[GraphClassifier, dict[str, torch.Tensor]]:
        c = job.config
        return _initial_model(
            c.model, job.data.num_features, int(job.data.num_classes), c.hidden, c.num_layers, c.dropout,
            c.seed_of(c.model_seed), job.device,
        )  # fmt: skip

    def fit(self, model: torch.nn.Module, job: LocalJob, optimizer: torch.optim.Optimizer, proximal_mu: float) -> float:
        (train, _, _), c = self.graphs(job), job.config
        return fit_graphs(model, train, c.local_epochs, c.graph_batch_size, optimizer, proximal_mu)  # type: ignore[arg-type]

    def figures(self, model: torch.nn.Module, job: LocalJob, which: str) -> dict[str, float]:
        _, val, test = self.graphs(job)
        val_key, test_key = _COUNTS[which]
        return {val_key: correct_graphs(model, val), test_key: correct_graphs(model, test)}  # type: ignore[arg-type]

    def train_private(
        self,
        model: torch.nn.Module,
        job: LocalJob,
        optimizer: torch.optim.Optimizer,
        accountant: RDPAccountant,
        generator: torch.Generator,
    ) -> PrivateTraining:
        """Per-graph DP-SGD on the training graphs: each graph is one record
        (:mod:`stamen.tasks.graph_classification.dp_sgd`)."""
        graphs = self.graphs(job)[0]
        return train_private_graphs(model, graphs, job.config, optimizer, accountant, generator)  # type: ignore[arg-type]

    def check_data(self, config: RunConfig, federation: Federation) -> None:
        """Two classes or more, and graphs to train on in every client (ValueError in one line)."""
        check_classes(config, federation)
        check_training_graphs(config, federation)

    def graphs(self, job: LocalJob) -> tuple[list[Data], list[Data], list[Data]]:
        """The client's training, validation and test graphs (on its device), unbatched once per process."""
        data = job.data
        cached = _SETS.get(id(data))
        if cached is None or cached[0] is not data:  # the data object is held: its id stays its own
            if not isinstance(data, Batch):
                raise TypeError(
                    f"task='graph-classification' needs a client's set of graphs; dataset {job.config.dataset!r} "
                    "gave one graph"
                )
            graphs = data.to_data_list()
            sets = tuple([g for g, keep in zip(graphs, mask.tolist(), strict=True) if keep]
                         for mask in (data.train_mask, data.val_mask, data.test_mask))  # fmt: skip
            if len(_SETS) >= 64:  # a long-lived process (sweeps in process) keeps the latest federations only
                _SETS.clear()
            cached = _SETS[id(data)] = (data, sets)  # type: ignore[assignment]
        return cached[1]  # type: ignore[return-value]


@functools.lru_cache(maxsize=8)
def _initial_model(
    name: str, in_dim: int, num_classes: int, hidden: int, num_layers: int, dropout: float, seed: int,
    device: torch.device,
) -> tuple[GraphClassifier, dict[str, torch.Tensor]]:  # fmt: skip
    torch.manual_seed(seed)
    model = build_graph_classifier(name, in_dim, num_classes, hidden, num_layers, dropout).to(device)
    return model, {key: value.detach().clone() for key, value in model.state_dict().items()}


def check_training_graphs(config: RunConfig, federation: Federation) -> None:
    """Every client of a graph set holds a graph to train on (its ``train_mask`` is over its graphs; the
    split rounds down, so a client of one graph has none). ValueError in one line naming the client."""
    for index, client in enumerate(federation.clients):
        graphs = int(client.train_mask.numel())
        if int(client.train_mask.sum()) == 0:
            raise ValueError(
                f"client {index} has no graphs to train graph classification on ({graphs} "
                f"graph{'s' if graphs != 1 else ''}, train-frac={config.train_frac:g}, "
                f"{len(federation.clients)} clients); use fewer clients, another partitioner or a dataset "
                "with more graphs"
            )


PART = GraphClassificationTask()
