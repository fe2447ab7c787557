"""The learning tasks a run may have: one registry entry per task, by the run config's ``task``.

A task says what a client learns from its subgraph and how it is scored:

- ``node-classification`` (the default): a class per node, scored by accuracy over the
  clients' validation and test nodes (:mod:`stamen.models.training`).
- ``link-prediction``: whether an edge joins two nodes. Each client splits its own edges
  into training, validation and test edges with seeded non-edges beside them
  (:mod:`stamen.graphs.link_splits`), trains an encoder with a dot-product (or MLP) decoder on
  its training edges against sampled non-edges, and is scored by AUC, average precision
  and Hits@K (:mod:`stamen.models.link_metrics`); the edges the partition cut, which no client
  sees, are scored by the same model too (the ``cut`` figures).
- ``graph-classification``: a class per small graph, for clients that each hold a set of
  graphs (a *graph set*, :func:`stamen.graphs.names.is_graph_set`: ``graphs-synth`` or ``tu:NAME``),
  shared out whole by ``label-dirichlet`` or ``random`` (:mod:`stamen.graphs.graph_federation`), or a list of
  graph sets dealt one dataset per client by ``cross-dataset`` (:mod:`stamen.graphs.cross_dataset`). A GIN
  or GCN with a readout per graph (:mod:`stamen.models.graph_classifier`) trains on mini-batches of
  graphs and is scored by accuracy over the clients' validation and test graphs, under node
  classification's figure names.

What a task admits comes from its spec here, never from a second list: the algorithms
(by name, from :mod:`stamen.contract.algorithms`; an algorithm made for one task, its spec's ``task``,
is admitted by that task alone and refused by the others for that reason), the models (:mod:`stamen.models.names`), the
datasets (:mod:`stamen.graphs.names`; ``None``: every one a run may read), the privacy modes,
and the settings it cannot honour (a run-config key with the one value it must keep).
A refusal names the reason (:func:`check_task`): one line, before any work. A task whose data the run
config's defaults do not fit brings its own (``defaults``, :func:`with_task_defaults`): ``task='graph-classification'``
alone reads ``graphs-synth`` dealt out by ``random``.

Privacy and robustness act on weights and carry over to every task: client-level DP (the
server clips and noises updates), secure aggregation (the server sums weights), the
model-poisoning attacks and the robust aggregators. DP-SGD needs a record whose gradient is its
own: a graph of graph classification is one (:mod:`stamen.models.graph_dp_sgd`); an edge of link
prediction is not (``privacy_refused``). ``label-flip`` flips a training example's class: a
node's, or a graph's; a link's label is an edge of the message graph (``attacks_refused``). The
label-flip certificates (:mod:`certify`) certify a node classifier and stay with node
classification (``fixed``).

Adding a task: its spec below, its client part (``client``: a module whose ``PART`` is a
:class:`stamen.client.tasks.ClientTask`; empty for node classification, the handlers' own path) and
its figures in :mod:`stamen.contract.figures`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stamen.common.suggest import one_of
from stamen.contract.algorithms import ALGORITHMS, GRAPH_FL_TASK, AlgorithmSpec
from stamen.contract.figures import ACCURACY_FIGURES, LINK_TASK_FIGURES
from stamen.graphs.names import (
    CROSS_DATASET,
    GRAPH_SET_PARTITIONERS,
    GRAPH_SETS,
    cross_dataset_problem,
    is_dataset_list,
    is_graph_set,
)
from stamen.models.names import NODE_TASKS, models_for

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig

NODE_CLASSIFICATION = "node-classification"
LINK_PREDICTION = "link-prediction"
GRAPH_CLASSIFICATION = "graph-classification"
assert GRAPH_FL_TASK == GRAPH_CLASSIFICATION  # the graph-FL methods' task, as stamen.contract.algorithms names it
assert NODE_TASKS == (NODE_CLASSIFICATION, LINK_PREDICTION)  # as stamen.models.names names them


def _any_task(spec: AlgorithmSpec) -> bool:
    """Its clients run the task's own local step and its server only combines weights (``any_task``)."""
    return spec.any_task


def _node_algorithm(spec: AlgorithmSpec) -> bool:
    """Every algorithm but those made for another task."""
    return spec.task in ("", NODE_CLASSIFICATION)


def _graph_algorithm(spec: AlgorithmSpec) -> bool:
    """The weight-combining algorithms and those made for graph classification."""
    return spec.any_task or spec.task == GRAPH_CLASSIFICATION


@dataclass(frozen=True)
class TaskSpec:
    """One learning task, as the run config and both apps know it (see the module docstring).

    Attributes:
        name: the run config's ``task``.
        help: one line for ``stamen config`` and ``--help``.
        client: the client part's module (empty: node classification's built-in path).
        admits: which algorithms it trains with, from their specs' facts (every other is refused, with
            ``refused``'s reason); :attr:`algorithms` names them, plug-ins included.
        refused: why the algorithms outside ``algorithms`` cannot run it.
        datasets: the datasets it admits (None: every dataset a run may read).
        privacy: the privacy modes it admits.
        privacy_refused: why the privacy modes outside ``privacy`` cannot run it.
        attacks_refused: the attacks (``attack``) it cannot run, each with why.
        graph_sets: its clients hold sets of small graphs: it reads the graph sets and only those (every other
            task reads one graph cut into subgraphs, never a graph set).
        examples: what a client's examples are, in words (``nodes``, ``edges``, ``graphs``): what its
            figures are pooled over, as the run's table and lines say.
        fixed: run-config keys whose default value it needs, each with why.
        defaults: run-config keys whose default it refuses, each with the value it takes instead (or a function of
            the other values giving it): a key left at the run config's default takes this one
            (``task='graph-classification'`` alone reads ``graphs-synth``).
        figures: the summary figures it produces (:data:`stamen.contract.figures.SUMMARY_FIGURES`' keys): a
            summary's final and best parts hold these alone.
        unavailable: non-empty: the task is declared but refused, with this reason.
    """

    name: str
    help: str
    client: str = ""
    admits: Callable[[AlgorithmSpec], bool] = _node_algorithm
    refused: str = ""
    datasets: tuple[str, ...] | None = None
    privacy: tuple[str, ...] = ("none", "dp-sgd", "client-dp")
    privacy_refused: str = ""
    attacks_refused: tuple[tuple[str, str], ...] = ()
    graph_sets: bool = False
    examples: str = "nodes"
    fixed: tuple[tuple[str, str], ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()  # (key, value or values -> value)
    figures: tuple[str, ...] = ACCURACY_FIGURES
    unavailable: str = ""

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The algorithms it trains with, in registry order (plug-ins included)."""
        return tuple(name for name, spec in ALGORITHMS.items() if self.admits(spec))

    @property
    def models(self) -> tuple[str, ...]:
        """The models it trains (their specs' ``tasks``), in registry order (plug-ins included)."""
        return models_for(self.name)


# Why the label-flip certificates (certify/) stay with node classification.
_CERTIFIES = (
    "certifies a node classifier's predictions against flipped node labels (the NTK of its GNN and a kernel SVM "
    "over one graph's nodes), which this task does not train"
)


def _graph_set_partitioner(values: dict[str, Any]) -> str:
    """A graph set's default partitioner: ``cross-dataset`` for a dataset list (one dataset per client), else an
    even seeded deal of the graphs (``random``)."""
    return CROSS_DATASET if is_dataset_list(str(values.get("dataset", ""))) else "random"


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(NODE_CLASSIFICATION, "a class per node (accuracy)"),
        TaskSpec(
            LINK_PREDICTION,
            "whether an edge joins two nodes, on each client's own edges and on the cut ones (AUC, AP, Hits@K)",
            client="stamen.client.link_prediction",
            admits=_any_task,
            refused="its client part trains a node classifier (class prototypes, label moments, heads, "
            "generated neighbours), not an edge scorer",
            privacy=("none", "client-dp"),
            examples="edges",
            figures=LINK_TASK_FIGURES,
            privacy_refused="DP-SGD clips per-record gradients, and an edge is no record here: it is both a "
            "training label and a message path of the encoder, so one edge moves the gradients of every edge "
            "near its endpoints",
            attacks_refused=(
                (
                    "label-flip",
                    "flipping a link's label adds a non-edge to or removes an edge from the client's training "
                    "graph, which is also the encoder's message graph: a structure attack, not a label flip",
                ),
            ),
            fixed=(
                ("unseen-node-frac", "hides nodes from node classification's training split"),
                ("missing-classes", "withholds node labels"),
                ("new-client", "holds out a client for node classification"),
                ("certify-budgets", _CERTIFIES),
                (
                    "unlearn-request",
                    "forgets nodes, classes or clients from a node classifier: its methods edit a classifier's head, "
                    "relabel or mask training nodes, none forgets a link predictor's training edges (no 'edges:' "
                    "request yet)",
                ),
            ),
        ),
        TaskSpec(
            GRAPH_CLASSIFICATION,
            "a class per small graph, for clients that each hold a set of graphs (accuracy over graphs)",
            client="stamen.client.graph_classification",
            admits=_graph_algorithm,
            refused="its client part trains a node classifier (class prototypes, label moments, heads, "
            "generated neighbours), not a graph classifier",
            graph_sets=True,
            examples="graphs",
            defaults=(("dataset", "graphs-synth"), ("partitioner", _graph_set_partitioner)),
            fixed=(
                ("unseen-node-frac", "hides nodes of one graph from node classification's training split"),
                ("missing-classes", "withholds node labels"),
                ("new-client", "holds out a subgraph for node classification"),
                ("certify-budgets", _CERTIFIES),
                ("unlearn-request", "forgets nodes, classes or clients from a node classifier"),
            ),
        ),
    )
}


def with_task_defaults(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` (a run config's, by attribute name) with the keys its task has defaults of (``defaults``) set to
    them where they hold the run config's own default, which that task refuses.

    Flower hands the ServerApp every key, the defaults filled in, so a key left at its default and one given
    as the default look the same: both take the task's (the run config's default would be refused anyway)."""
    task = values.get("task", NODE_CLASSIFICATION)
    if task not in TASKS:
        return values
    defaults = _defaults()
    out = dict(values)
    for key, value in TASKS[task].defaults:
        attribute = key.replace("-", "_")
        if out.get(attribute, defaults[key]) == defaults[key]:
            out[attribute] = value(out) if callable(value) else value
    return out


def check_task(config: RunConfig) -> None:
    """ValueError in one line when ``config``'s task cannot run with its algorithm, model, dataset or settings."""
    spec = TASKS[config.task]
    if spec.unavailable:
        raise ValueError(f"task={spec.name!r} is {spec.unavailable}; use task {one_of(available())}")
    made_for = ALGORITHMS[config.algorithm].task
    if made_for and made_for != spec.name:
        raise ValueError(
            f"task={spec.name!r} cannot run algorithm={config.algorithm!r}: it is a method for task {made_for!r} "
            f"only; use task={made_for!r}, or algorithm {one_of(spec.algorithms)}"
        )
    if config.algorithm not in spec.algorithms:
        raise ValueError(
            f"task={spec.name!r} cannot run algorithm={config.algorithm!r}: {spec.refused}; "
            f"use algorithm {one_of(spec.algorithms)}"
        )
    if config.model not in spec.models:
        raise ValueError(f"task={spec.name!r} cannot train model={config.model!r}; use model {one_of(spec.models)}")
    if spec.datasets is not None and config.dataset not in spec.datasets:
        raise ValueError(f"task={spec.name!r} cannot read dataset={config.dataset!r}; use {one_of(spec.datasets)}")
    _check_graph_sets(spec, config)
    if config.privacy not in spec.privacy:
        raise ValueError(
            f"task={spec.name!r} does not admit privacy={config.privacy!r} ({spec.privacy_refused}); "
            f"use privacy {one_of(spec.privacy)}"
        )
    defaults = _defaults()
    for key, why in spec.fixed:
        value = getattr(config, key.replace("-", "_"))
        if value != defaults[key]:
            raise ValueError(
                f"task={spec.name!r} cannot honour {key}={value!r}: it {why}; leave {key} at {defaults[key]!r}"
            )
    for attack, why in spec.attacks_refused:
        if config.attack == attack:
            raise ValueError(
                f"task={spec.name!r} cannot run attack={attack!r}: {why}; use attack 'sign-flip' or 'gaussian'"
            )


def _check_graph_sets(spec: TaskSpec, config: RunConfig) -> None:
    """A graph set for a task whose clients hold graph sets, one graph for every other; graph sets are
    shared out by a partitioner over graphs, a dataset list by ``cross-dataset`` alone."""
    if is_graph_set(config.dataset) and not spec.graph_sets:
        raise ValueError(
            f"dataset={config.dataset!r} is a set of small graphs, for task {GRAPH_CLASSIFICATION!r}; "
            f"task={spec.name!r} cuts one graph into subgraphs: use a dataset such as 'csbm' or 'cora'"
        )
    if spec.graph_sets and not is_graph_set(config.dataset):
        raise ValueError(
            f"task={spec.name!r} needs clients that each hold many small graphs; dataset={config.dataset!r} is one "
            f"graph cut into subgraphs: use dataset {one_of((*GRAPH_SETS, 'tu:NAME'))}"
        )
    problem = cross_dataset_problem(
        config.dataset, config.partitioner
    )  # the clients' count: stamen.graphs.cross_dataset
    if problem:
        raise ValueError(problem)
    if spec.graph_sets and config.partitioner not in (*GRAPH_SET_PARTITIONERS, CROSS_DATASET):
        raise ValueError(
            f"partitioner={config.partitioner!r} cuts one graph by its edges; task={spec.name!r} shares out whole "
            f"graphs: use partitioner {one_of(GRAPH_SET_PARTITIONERS)}"
        )


def examples(task: str | None) -> str:
    """What task ``task``'s figures are pooled over (``nodes`` for an unknown or missing task: a record of an
    earlier version)."""
    spec = TASKS.get(task or NODE_CLASSIFICATION)
    return spec.examples if spec is not None else "nodes"


def available() -> tuple[str, ...]:
    """The tasks a run may have now, in registry order."""
    return tuple(name for name, spec in TASKS.items() if not spec.unavailable)


def _defaults() -> dict[str, Any]:
    # on use: stamen.contract.run_config imports this module
    from stamen.contract.run_config import KEYS

    return {name: key.default for name, key in KEYS.items()}
