"""A graph set's graphs (:func:`load_graph_set`, read by its spec's reader) and one client's batch of them
(:func:`client_batch`), for the federations of graph sets (:mod:`stamen.graphs.graph_federation`,
:mod:`stamen.graphs.cross_dataset`)."""

from __future__ import annotations

import numpy as np
from torch_geometric.data import Batch, Data

from stamen.graphs.datasets import data_root
from stamen.graphs.names import dataset_problem, dataset_spec, resolve
from stamen.graphs.spec import FederationSpec
from stamen.graphs.splits import split_masks


def load_graph_set(name: str, root: str | None, seed: int) -> list[Data]:
    """The graphs of graph set ``name`` (``graphs-synth`` from ``seed``; ``tu:NAME`` from ``root``), read by its
    spec's reader (:class:`stamen.graphs.names.DatasetSpec`)."""
    problem = dataset_problem(name)
    if problem:
        raise ValueError(problem)
    spec = dataset_spec(name)
    assert spec is not None  # a name without a problem has a spec
    if not spec.files:  # generated from the seed
        graphs: list[Data] = resolve(spec.reader)(name, None, seed)
        return graphs
    folder = data_root(root)
    if folder is None:
        raise FileNotFoundError(
            f"dataset {name!r} needs a data root: set the run-config key data-root "
            "(stamen run -c \"data-root='/data'\") or the environment variable STAMEN_DATA"
        )
    graphs = resolve(spec.reader)(name, folder, seed)
    return graphs


def client_batch(graphs: list[Data], part: np.ndarray, spec: FederationSpec, index: int, num_classes: int) -> Batch:
    """Client ``index``'s graphs (the ids in ``part``) as one batch, split train/validation/test by graph."""
    batch = Batch.from_data_list([graphs[int(g)] for g in part])
    batch.train_mask, batch.val_mask, batch.test_mask = split_masks(
        int(part.size), spec.train_frac, spec.val_frac, seed=spec.seed * 100_003 + index
    )
    batch.num_classes = num_classes
    return batch
