"""What defines a federation's clients: :class:`FederationSpec`, a frozen value with no code.

The run config derives it once (:meth:`stamen.contract.run_config.RunConfig.federation`), so its
fields carry the run config's defaults; a test keeps the two equal. :mod:`stamen.graphs.federation`
builds the clients from it. This module imports nothing heavy: the contract reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stamen.graphs.names import DEFAULT_PARTITIONER


@dataclass(frozen=True)
class FederationSpec:
    """Everything that defines the clients' subgraphs and splits.

    Attributes:
        dataset: dataset name (see :data:`graphs.DATASETS`).
        num_clients: number of training clients K.
        partitioner: partitioner name (see :data:`stamen.graphs.names.PARTITIONER_SPECS`).
        seed: seed of the partition and the splits (and of the generated graph unless ``data_seed`` is given).
        data_root: data root of file datasets ('' for none).
        dirichlet_alpha: concentration of ``label-dirichlet``.
        train_frac, val_frac: per-client split fractions; test takes the rest.
        new_client: hold out one more part that never trains (the "new client").
        unseen_node_frac: share of each client's nodes held out of training (see :mod:`stamen.graphs.settings`).
        missing_classes: classes whose labels each client withholds (see :mod:`stamen.graphs.settings`).
        dataset_options: generator options as sorted ``(name, value)`` pairs.
        data_seed: seed of the generated graph (csbm, a generated graph set); None: ``seed``.
    """

    dataset: str = "csbm"
    num_clients: int = 10
    partitioner: str = DEFAULT_PARTITIONER
    seed: int = 0
    data_root: str = ""
    dirichlet_alpha: float = 0.5
    train_frac: float = 0.6
    val_frac: float = 0.2
    new_client: bool = False
    unseen_node_frac: float = 0.0
    missing_classes: int = 0
    dataset_options: tuple[tuple[str, float], ...] = field(default_factory=tuple)
    data_seed: int | None = None

    @property
    def graph_seed(self) -> int:
        """The seed the graph is generated from: ``data_seed``, else ``seed``."""
        return self.seed if self.data_seed is None else self.data_seed
