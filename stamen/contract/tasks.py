"""The learning tasks a run may have: one registry of :class:`TaskSpec`, by the run config's ``task``.

A task says what a client learns from its data and how it is scored. Each is a plug-in: its spec
(here, a frozen value: no torch), its client part (a module whose ``PART`` is a
:class:`stamen.client.tasks.ClientTask`: the model, the local step, the figures, the sizes) and its
model where it has one of its own, in one package. Stamen's own are ``stamen/tasks/<task>/``
(node classification, link prediction, graph classification), registered through entry points of group
``stamen.tasks`` exactly as a researcher's package registers its own; a task registered from Python
(``stamen.register_task(spec)``) runs on the in-process engine (:func:`stamen.common.registry.check_engine`).

The server reads a task's figures, its headline metric and how client figures pool from the spec
(:class:`Pooling`), never from the task's name. What a task admits comes from its spec, never from a
second list: the algorithms (by their specs' facts: an algorithm made for one task, its spec's ``task``,
is admitted by that task alone and refused by the others for that reason), the models (:mod:`stamen.models.names`),
the datasets, the privacy modes, the attacks, and the settings it cannot honour (a run-config key with the one
value it must keep). A refusal names the reason (:func:`check_task`): one line, before any work. A task whose
data the run config's defaults do not fit brings its own (``defaults``, :func:`with_task_defaults`).
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stamen.common.registry import BUILT_IN, PYTHON, Registry
from stamen.common.suggest import one_of
from stamen.contract.algorithms import ALGORITHMS, AlgorithmSpec, Condition, check_specs_with
from stamen.contract.figures import ACCURACY_FIGURES, SUMMARY_FIGURES
from stamen.graphs.names import (
    CROSS_DATASET,
    cross_dataset_problem,
    graph_set_forms,
    graph_set_partitioners,
    is_graph_set,
)
from stamen.models.names import models_for

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig

# The run config's default task: Flower's app config and RunConfig's key name it (a test keeps the two equal).
DEFAULT_TASK = "node-classification"

# Why the label-flip certificates (certify/) and unlearning stay with a node classifier: a task that trains none
# fixes ``certify-budgets`` and ``unlearn-request`` at their defaults with these reasons.
CERTIFIES_NODE_CLASSIFIER = (
    "certifies a node classifier's predictions against flipped node labels (the NTK of its GNN and a kernel SVM "
    "over one graph's nodes), which this task does not train"
)


class Pooling(enum.Enum):
    """How the server pools the clients' figures of a round into the row's (:mod:`stamen.server.rows`)."""

    COUNTS = "counts"  # correct examples added over clients, over the examples added: accuracy
    WEIGHTED = "weighted"  # each client's own figure, weighted by its positive examples of the set (AUC, AP, Hits@K)


def _general(spec: AlgorithmSpec) -> bool:
    """Every algorithm not made for one task."""
    return True


@dataclass(frozen=True)
class TaskSpec:
    """One learning task, as the run config and both apps know it (see the module docstring).

    Attributes:
        name: the run config's ``task``: lower-case letters, digits and ``-``.
        help: one line for ``stamen config`` and ``--help``.
        client: the client part's module, whose ``PART`` is a :class:`stamen.client.tasks.ClientTask`.
        figures: the summary figures it produces (:data:`stamen.contract.figures.SUMMARY_FIGURES`' keys): a
            summary's final and best parts hold these alone.
        headline: its headline metric: the figure suffix of ``global_test_<headline>``, ``test_<headline>``
            (``acc``, ``auc``); the best round is the one of best validation ``headline``.
        headline_label: the headline in words (``accuracy``, ``AUC``).
        pooling: how the server pools the clients' figures (:class:`Pooling`).
        examples: what a client's examples are, in words (``nodes``, ``edges``, ``graphs``): what its
            figures are pooled over, as the run's table and lines say.
        admits: which algorithms not made for one task it trains with, from their specs' facts (an algorithm
            made for this task, its spec's ``task``, is admitted always); :attr:`algorithms` names them.
        refused: why the algorithms outside ``algorithms`` cannot run it.
        models_of: the task whose models it trains (its own name when empty: the models whose specs name it).
        datasets: the datasets it admits (None: every dataset a run may read).
        privacy: the privacy modes it admits.
        privacy_refused: why the privacy modes outside ``privacy`` cannot run it.
        attacks_refused: the attacks (``attack``) it cannot run, each with why.
        graph_sets: its clients hold sets of small graphs: it reads the graph sets and only those (every other
            task reads one graph cut into subgraphs, never a graph set).
        full_batch: a local epoch is one step over a client's whole training split (False: a step per
            mini-batch, several where a client holds more examples than a batch); :data:`ONE_LOCAL_STEP` reads it.
        fixed: run-config keys whose default value it needs, each with why.
        defaults: run-config keys whose default it refuses (dataset, partitioner, model), each with the value it
            takes instead (or a function of the other values giving it): a key left at the run config's default
            takes this one.
        model_keys: run-config keys that build its model besides model, hidden and num-layers (``model.pt``'s
            spec records them).
        check: its own rules on a run config beyond the above (None: none): raises ValueError in one line.
        unavailable: non-empty: the task is declared but refused, with this reason.
    """

    name: str
    help: str
    client: str
    figures: tuple[str, ...] = ACCURACY_FIGURES
    headline: str = "acc"
    headline_label: str = "accuracy"
    pooling: Pooling = Pooling.COUNTS
    examples: str = "nodes"
    admits: Callable[[AlgorithmSpec], bool] = _general
    refused: str = ""
    models_of: str = ""
    datasets: tuple[str, ...] | None = None
    privacy: tuple[str, ...] = ("none", "dp-sgd", "client-dp")
    privacy_refused: str = ""
    attacks_refused: tuple[tuple[str, str], ...] = ()
    graph_sets: bool = False
    full_batch: bool = True
    fixed: tuple[tuple[str, str], ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()  # (key, value or values -> value)
    model_keys: tuple[str, ...] = ()
    check: Callable[[RunConfig], None] | None = None
    unavailable: str = ""

    @property
    def algorithms(self) -> tuple[str, ...]:
        """The algorithms it trains with, in registry order (plug-ins included)."""
        return tuple(
            name for name, spec in ALGORITHMS.items() if spec.task == self.name or (not spec.task and self.admits(spec))
        )

    @property
    def models(self) -> tuple[str, ...]:
        """The models it trains (their specs' ``tasks``), in registry order (plug-ins included)."""
        return models_for(self.models_of or self.name)


_NAME = re.compile(r"[a-z][a-z0-9-]*")
_MODULE = re.compile(r"[A-Za-z_][\w.]*")


def register_task(spec: TaskSpec, *, origin: str = PYTHON) -> TaskSpec:
    """Enter ``spec`` in :data:`TASKS`; ValueError in one line when the spec cannot be one.

    ``origin``: where it comes from (:mod:`stamen.common.registry`): from Python in this process (the
    default), or an entry point (Stamen's own tasks come so too).
    """
    if not isinstance(spec, TaskSpec):
        raise ValueError(f"a task plug-in is a stamen.TaskSpec, got {type(spec).__name__}")
    if not _NAME.fullmatch(spec.name):
        raise ValueError(f"task name {spec.name!r} must be lower-case letters, digits and -")
    if not _MODULE.fullmatch(spec.client):
        raise ValueError(f"task {spec.name!r}: client must name a module, got {spec.client!r}")
    known = dict(SUMMARY_FIGURES)
    unknown = [figure for figure in spec.figures if figure not in known]
    if unknown:
        raise ValueError(
            f"task {spec.name!r}: figures {', '.join(unknown)} are not summary figures "
            "(stamen/contract/figures.py); a task reports the declared figures"
        )
    if not isinstance(spec.pooling, Pooling):
        raise ValueError(f"task {spec.name!r}: pooling must be a stamen.Pooling, got {spec.pooling!r}")
    TASKS.add(spec.name, spec, origin)
    return spec


TASKS: Registry[TaskSpec] = Registry("task", "stamen.tasks", register_task)


def with_task_defaults(values: dict[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (a run config's, by attribute name) with the keys its task has defaults of (its spec's
    ``defaults``) set to them where they hold the run config's own default (``defaults``, by key name), which
    that task refuses.

    Flower hands the ServerApp every key, the defaults filled in, so a key left at its default and one given
    as the default look the same: both take the task's (the run config's default would be refused anyway)."""
    task = values.get("task", DEFAULT_TASK)
    if task not in TASKS:
        return values
    out = dict(values)
    for key, value in TASKS[task].defaults:
        attribute = key.replace("-", "_")
        if out.get(attribute, defaults[key]) == defaults[key]:
            out[attribute] = value(out) if callable(value) else value
    return out


def check_task(config: RunConfig) -> None:
    """ValueError in one line when ``config``'s task cannot run with its algorithm, model, dataset or settings."""
    spec = TASKS.lookup(config.task, "task")
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
    defaults = {field.name: field.default for field in dataclasses.fields(config)}  # by attribute
    for key, why in spec.fixed:
        attribute = key.replace("-", "_")
        value = getattr(config, attribute)
        if value != defaults[attribute]:
            raise ValueError(
                f"task={spec.name!r} cannot honour {key}={value!r}: it {why}; leave {key} at {defaults[attribute]!r}"
            )
    for attack, why in spec.attacks_refused:
        if config.attack == attack:
            raise ValueError(
                f"task={spec.name!r} cannot run attack={attack!r}: {why}; use attack 'sign-flip' or 'gaussian'"
            )
    if spec.check is not None:
        spec.check(config)


def _check_graph_sets(spec: TaskSpec, config: RunConfig) -> None:
    """A graph set for a task whose clients hold graph sets, one graph for every other; graph sets are
    shared out by a partitioner over graphs, a dataset list by ``cross-dataset`` alone."""
    if is_graph_set(config.dataset) and not spec.graph_sets:
        raise ValueError(
            f"dataset={config.dataset!r} is a set of small graphs, for task {one_of(graph_set_tasks())}; "
            f"task={spec.name!r} cuts one graph into subgraphs: use a dataset such as 'csbm' or 'cora'"
        )
    if spec.graph_sets and not is_graph_set(config.dataset):
        raise ValueError(
            f"task={spec.name!r} needs clients that each hold many small graphs; dataset={config.dataset!r} is one "
            f"graph cut into subgraphs: use dataset {one_of(graph_set_datasets())}"
        )
    problem = cross_dataset_problem(config.dataset, config.partitioner)  # the clients' count: graphs.cross_dataset
    if problem:
        raise ValueError(problem)
    if spec.graph_sets and config.partitioner not in (*graph_set_partitioners(), CROSS_DATASET):
        raise ValueError(
            f"partitioner={config.partitioner!r} cuts one graph by its edges; task={spec.name!r} shares out whole "
            f"graphs: use partitioner {one_of(graph_set_partitioners())}"
        )


def graph_set_tasks() -> tuple[str, ...]:
    """The tasks whose clients hold graph sets, in registry order."""
    return tuple(name for name, spec in TASKS.items() if spec.graph_sets)


def graph_set_datasets() -> tuple[str, ...]:
    """The graph-set datasets and forms, as a refusal names them."""
    return tuple(graph_set_forms())


def task_spec(task: str | None) -> TaskSpec | None:
    """The spec of ``task`` (the default task's for a missing one: a record of an earlier version), None for a
    task this process does not know."""
    return TASKS.get(task or DEFAULT_TASK)


def examples(task: str | None) -> str:
    """What task ``task``'s figures are pooled over (``nodes`` for an unknown or missing task:
    a record of an earlier version)."""
    spec = task_spec(task)
    return spec.examples if spec is not None else "nodes"


def _one_local_step(config: RunConfig) -> bool:
    spec = task_spec(config.task)
    return config.local_epochs == 1 and config.privacy != "dp-sgd" and spec is not None and spec.full_batch


ONE_LOCAL_STEP = Condition(
    "one local step a round (local-epochs=1, full-batch: no graph sets, no dp-sgd)", _one_local_step
)
"""A client's local training is one step from the weights it received (an algorithm spec's ``equals_when``)."""


def available() -> tuple[str, ...]:
    """The tasks a run may have now, in registry order."""
    return tuple(name for name, spec in TASKS.items() if not spec.unavailable)


def _names_a_task(spec: AlgorithmSpec, origin: str) -> None:
    """A plug-in algorithm made for one task (:attr:`AlgorithmSpec.task`) names a registered one: ValueError in
    one line. (Stamen's own are not read here: they load while the tasks may still be loading.)"""
    if origin != BUILT_IN and spec.task and spec.task not in TASKS:
        raise ValueError(f"algorithm {spec.name!r}: task {spec.task!r} is not one of {', '.join(TASKS)}")


check_specs_with(_names_a_task)
