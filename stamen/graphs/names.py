"""The names a run config may use for datasets and partitioners.

Kept free of heavy imports so that a process that only checks a config (the
ServerApp, the CLI's parser) never loads PyTorch Geometric.

A dataset is a plug-in: its spec (:class:`DatasetSpec`) enters one registry, :data:`DATASET_SPECS`, through
:func:`register_dataset` from Python or a package's ``stamen.datasets`` entry points, as Stamen's own do (one
module each in :mod:`stamen.graphs.forms`). A spec is a fixed name (``cora``; all of them:
:data:`DATASETS`) or a form whose prefix takes a parameter that names files under the data root
(``npz:STEM``, ``pyg:CLASS/NAME``, ``ogb:ogbn-NAME``, ``tu:NAME``; all of them: :data:`DATASET_FORMS`),
checked by the form's own ``check``. Lists and messages show them in registry order.

*Graph sets* (specs with ``graph_set``: ``graphs-synth`` and ``tu:NAME``, :func:`is_graph_set`) are many
small graphs with a class each, which the clients share out graph by graph; every other dataset is one
graph that the clients cut into subgraphs. Which task reads which is :mod:`stamen.contract.tasks`.

A *dataset list* joins two or more distinct graph sets with ``+`` (:data:`LIST_SEPARATOR`),
``graphs-synth+tu:MUTAG``: the cross-dataset setting of graph-FL, one dataset per client, dealt
by ``partitioner='cross-dataset'`` and by no other (:func:`cross_dataset_problem`; the lists are not
pooled). ``+`` is in none of the single forms' names (``.``, ``-``, ``_``, ``/`` and ``:`` are), so a
list splits one way. Each part is checked as its single form is; a part that is one graph is refused.
Client ``i`` holds part ``i mod D`` (:func:`client_datasets`; the graphs: :mod:`stamen.graphs.cross_dataset`).

:func:`dataset_problem` checks a name's shape (no files are touched), in one line.

A partitioner is a plug-in: its spec (:class:`PartitionerSpec`) enters one registry,
:data:`PARTITIONER_SPECS`, through :func:`register_partitioner` from Python or a package's ``stamen.partitioners``
entry points (:mod:`stamen.common.registry`), as Stamen's own do (:mod:`stamen.graphs.partitioners`). The run
config's ``partitioner`` choices are the registry's and ``cross-dataset`` (:data:`RUN_PARTITIONERS`).
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from stamen.common.registry import BUILT_IN, PYTHON, Registry

CROSS_DATASET = "cross-dataset"  # one dataset of a dataset list per client (stamen.graphs.cross_dataset)
DEFAULT_PARTITIONER = "louvain"  # the run config's default (Flower's app config holds it too)
LIST_SEPARATOR = "+"


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset, or one form of datasets (``npz:STEM``): its name, how it is read and what it costs.

    Attributes:
        name: a fixed name (``cora``: letters, digits, ``_ . -``), or a form's prefix ending in ``:`` (``npz:``),
            followed in a run config by the form's parameter (``npz:cora_ml``).
        help: one line for ``stamen config dataset`` (:func:`dataset_helps`).
        reader: ``module:function`` of ``reader(name, root, seed, **options)``: ``name`` is the dataset as the run
            config gives it (``npz:cora_ml``), ``root`` the data root (a ``Path``; ``None`` only for a dataset
            without files), ``seed`` the run's seed (a generator's draws), ``options`` a generator's options
            (``csbm``'s; a dataset with files gets none). One graph: a ``torch_geometric.data.Data`` with ``x``
            (n x d features), ``edge_index`` (2 x E node ids, either direction: Stamen makes it undirected,
            coalesced, self-loop free), ``y`` (n classes ``0..C-1``) and ``num_classes`` (C). A graph set: a list
            of such ``Data``, one per graph, with ``y`` its graph's class (shape ``(1,)``) and no
            ``num_classes`` (Stamen counts the classes). A missing file is a one-line ``FileNotFoundError``,
            a damaged one a one-line ``ValueError``; nothing read may execute code (no pickles).
        graph_set: a set of small graphs (graph classification's), not one graph (node tasks').
        parameter: a form's parameter, in words (``STEM``: the form reads ``npz:STEM``); empty for a fixed name.
        check: a form's ``module:function`` of ``check(name) -> str | None``, torch-free: what is wrong with the
            form's parameter in ``name`` (one line naming what to write), or ``None``. Required for a form: the
            parameter names files under the data root, so it must not reach outside it (no ``/``, no ``..``).
        files: ``module:function`` of ``files(name, root) -> list of Path``, torch-free: the files the reader
            reads under data root ``root``. The size pre-flight counts twice their size (read, then held as
            tensors); empty: a dataset generated from the seed, with no files and no data root.
        listed: how lists of the accepted datasets show it (default: the name, or ``prefix:PARAMETER``).
    """

    name: str
    help: str
    reader: str
    graph_set: bool = False
    parameter: str = ""
    check: str = ""
    files: str = ""
    listed: str = ""

    @property
    def form(self) -> str:
        """The dataset as written in lists and messages: ``cora``, ``npz:STEM``."""
        return f"{self.name}{self.parameter}"


_DATASET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*:?")


def register_dataset(spec: DatasetSpec, *, origin: str = PYTHON) -> DatasetSpec:
    """Enter ``spec`` in :data:`DATASET_SPECS`; ValueError in one line when the spec cannot be one."""
    if not isinstance(spec, DatasetSpec):
        raise ValueError(f"a dataset plug-in is a stamen.DatasetSpec, got {type(spec).__name__}")
    if not _DATASET_NAME.fullmatch(spec.name):
        raise ValueError(
            f"dataset name {spec.name!r} must be letters, digits, _ . - (a form: a prefix ending in ':', like 'npz:')"
        )
    is_form = spec.name.endswith(":")
    if is_form and not (spec.parameter and spec.check):
        raise ValueError(f"dataset form {spec.name!r} needs a parameter (in words) and a check of it (module:function)")
    if not is_form and (spec.parameter or spec.check):
        raise ValueError(f"dataset {spec.name!r} is a fixed name: it takes no parameter or check (a form ends in ':')")
    for field in ("reader", "check", "files"):
        path = getattr(spec, field)
        if (path or field == "reader") and not _FUNCTION.fullmatch(path):
            raise ValueError(f"dataset {spec.name!r}: {field} must name module:function, got {path!r}")
    DATASET_SPECS.add(spec.name, spec, origin)
    return spec


DATASET_SPECS: Registry[DatasetSpec] = Registry("dataset", "stamen.datasets", register_dataset)


def dataset_spec(name: str) -> DatasetSpec | None:
    """The spec of single dataset ``name`` (a fixed name, or a form by its prefix), or ``None`` if none."""
    prefix, colon, _ = name.partition(":")
    return DATASET_SPECS.get(prefix + colon if colon else name)


def _specs(graph_set: bool, form: bool) -> list[DatasetSpec]:
    """The registered specs of one kind (graph sets or one graph; forms or fixed names), in registry order."""
    return [spec for spec in DATASET_SPECS.values() if spec.graph_set == graph_set and spec.name.endswith(":") == form]


def __getattr__(name: str) -> tuple[str, ...]:
    """:data:`DATASETS` (the fixed names of one graph), :data:`GRAPH_SETS` (of graph sets) and
    :data:`DATASET_FORMS` (every form, ``npz:STEM``), read live from the registry."""
    if name == "DATASETS":
        return tuple(spec.name for spec in _specs(graph_set=False, form=False))
    if name == "GRAPH_SETS":
        return tuple(spec.name for spec in _specs(graph_set=True, form=False))
    if name == "DATASET_FORMS":
        return tuple(spec.form for spec in DATASET_SPECS.values() if spec.name.endswith(":"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def dataset_helps() -> dict[str, str]:
    """Each registered dataset and form as written (``npz:STEM``) with its help line, in registry order; a
    plug-in's help says where it came from."""
    helps = {}
    for name, spec in DATASET_SPECS.items():
        origin = DATASET_SPECS.origin(name)
        helps[spec.form] = spec.help if origin == BUILT_IN else f"{spec.help} (a plug-in: {origin})"
    return helps


def is_graph_set(name: str) -> bool:
    """Whether dataset ``name`` is a set of small graphs (graph classification's), not one graph; a dataset
    list is one when each of its parts is."""
    return all((spec := dataset_spec(part)) is not None and spec.graph_set for part in dataset_parts(name))


def dataset_parts(name: str) -> tuple[str, ...]:
    """The datasets of dataset list ``name`` in order (``(name,)`` for a single dataset)."""
    return tuple(name.split(LIST_SEPARATOR))


def is_dataset_list(name: str) -> bool:
    """Whether ``name`` joins several datasets (``graphs-synth+tu:MUTAG``)."""
    return LIST_SEPARATOR in name


def client_datasets(name: str, num_clients: int) -> list[str]:
    """The dataset each of ``num_clients`` clients holds under ``cross-dataset``: client ``i`` part ``i mod D``."""
    parts = dataset_parts(name)
    return [parts[index % len(parts)] for index in range(num_clients)]


def cross_dataset_problem(dataset: str, partitioner: str, num_clients: int | None = None) -> str | None:
    """What keeps ``partitioner`` from dealing ``dataset`` to ``num_clients`` clients (one line), or ``None``:
    a dataset list goes with ``cross-dataset`` only, ``cross-dataset`` with a list only, and a list of ``D``
    datasets needs ``D`` clients at least (``None``: not known yet)."""
    listed = is_dataset_list(dataset)
    example = "graphs-synth+tu:MUTAG"
    if partitioner == CROSS_DATASET and not listed:
        return (
            f"partitioner={CROSS_DATASET!r} deals one dataset per client and needs a list of graph sets joined by "
            f"{LIST_SEPARATOR!r}; dataset={dataset!r} is one dataset: give e.g. dataset={example!r} "
            "(task 'graph-classification'), or another partitioner"
        )
    if not listed:
        return None
    count = len(dataset_parts(dataset))
    if partitioner != CROSS_DATASET:
        return (
            f"dataset={dataset!r} lists {count} datasets, which only partitioner={CROSS_DATASET!r} deals out (one "
            f"per client; Stamen does not pool them): use partitioner={CROSS_DATASET!r}, or one dataset"
        )
    if num_clients is not None and num_clients < count:
        return (
            f"partitioner={CROSS_DATASET!r} gives each of the {count} datasets of {dataset!r} its own clients and "
            f"needs at least {count} clients, got {num_clients}: use {count} clients or more, or fewer datasets"
        )
    return None


def accepted_datasets(also: tuple[str, ...] = (), graph_sets: bool = True) -> str:
    """Every accepted dataset name and form, in words (one line, for help texts); ``also``: a
    caller's own names first (``stamen certify``'s ``csbm-paper``); ``graph_sets``: the graph sets too.
    In registry order, except that a form shown by its spec's ``listed`` words (``pyg:``, with its classes)
    comes after the forms shown by their name alone."""
    forms = sorted(_specs(False, form=True), key=lambda spec: bool(spec.listed))  # the long words last
    one = [spec.listed or spec.form for spec in (*_specs(False, form=False), *forms)]
    sets = graph_set_forms()
    listed = f"; graph sets: {', '.join(sets)}, and lists of them joined by '+'" if graph_sets and sets else ""
    return f"{', '.join((*also, *one))}{listed}"


def dataset_problem(name: str, also: tuple[str, ...] = (), graph_sets: bool = True) -> str | None:
    """What is wrong with the dataset name ``name`` (one line naming what to write), or ``None``.

    ``also``: names a caller accepts besides the datasets (``stamen certify``'s ``csbm-paper``);
    ``graph_sets``: whether the caller reads graph sets (``stamen certify`` reads one graph).
    A dataset list: each part as its single form, named (see the module docstring); a form's parameter:
    its spec's ``check``.
    """
    if is_dataset_list(name):
        return _list_problem(name, also, graph_sets)
    if not graph_sets and is_graph_set(name):
        one_graph = accepted_datasets(also, graph_sets=False)
        return f"dataset {name!r} is a set of small graphs (graph classification's); give one graph: {one_graph}"
    prefix, colon, _ = name.partition(":")
    forms = tuple(spec.form for spec in DATASET_SPECS.values() if spec.name.endswith(":"))
    if not colon:
        names = (*also, *(spec.name for spec in (*_specs(False, form=False), *_specs(True, form=False))))
        if name in names:
            return None
        return (
            f"unknown dataset {name!r}; dataset must be one of: {', '.join((*names, *forms))}"
            f"{_did_you_mean(name, names)}"
        )
    spec = dataset_spec(name)
    if spec is None:
        return f"unknown dataset form {prefix + ':'!r} in {name!r}; the forms are {', '.join(forms)}"
    problem: str | None = resolve(spec.check)(name)
    return problem


def _list_problem(name: str, also: tuple[str, ...], graph_sets: bool) -> str | None:
    """:func:`dataset_problem` of a dataset list: the first bad part, named."""
    how = f"join two or more graph sets with {LIST_SEPARATOR!r}, e.g. 'graphs-synth+tu:MUTAG'"
    if not graph_sets:
        one_graph = accepted_datasets(also, graph_sets=False)
        return f"dataset {name!r} is a list of graph sets (graph classification's); give one graph: {one_graph}"
    seen: set[str] = set()
    for number, part in enumerate(dataset_parts(name), start=1):
        if not part:
            return f"dataset list {name!r}: part {number} is empty; {how}"
        problem = dataset_problem(part)
        if problem:
            return f"dataset list {name!r}, part {number} ({part!r}): {problem}"
        if not is_graph_set(part):
            return (
                f"dataset list {name!r}, part {number} ({part!r}) is one graph, not a graph set; a list deals graph "
                f"sets ({', '.join(graph_set_forms())}) to the clients of task 'graph-classification': {how}"
            )
        if part in seen:
            return f"dataset list {name!r}: part {number} ({part!r}) is listed twice (the same graphs twice); {how}"
        seen.add(part)
    return None


def graph_set_forms() -> list[str]:
    """The graph sets' names and forms (``graphs-synth``, ``tu:NAME``), in registry order."""
    return [spec.form for spec in (*_specs(True, form=False), *_specs(True, form=True))]


def dataset_slug(name: str) -> str:
    """``name`` fit for a file or folder name: ``pyg:Amazon/Computers`` -> ``pyg-Amazon-Computers``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def _did_you_mean(word: str, known: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True)
class PartitionerSpec:
    """One partitioner: how a graph's nodes (or a graph set's graphs) are shared out among K clients.

    Attributes:
        name: the run config's ``partitioner``: lower-case letters, digits and ``-``.
        help: one line for ``stamen config`` and ``--help``.
        function: ``module:function`` of ``function(data, num_parts, seed, alpha) -> list of K arrays of ids``:
            ``data`` is a PyG ``Data`` (one graph: ``num_nodes``, ``edge_index``, ``y``; a graph set's graphs:
            ``num_nodes`` graphs and their labels ``y`` alone), ``seed`` seeds every draw (the same seed gives
            the same parts), ``alpha`` is the run's ``dirichlet-alpha``; the K arrays are disjoint and cover
            each id once (Stamen checks it, and refuses an empty part).
        graphs: it needs the items' labels alone, so it shares out a graph set's graphs too.
    """

    name: str
    help: str
    function: str
    graphs: bool = False


_NAME = re.compile(r"[a-z][a-z0-9-]*")
_FUNCTION = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def register_partitioner(spec: PartitionerSpec, *, origin: str = PYTHON) -> PartitionerSpec:
    """Enter ``spec`` in :data:`PARTITIONER_SPECS`; ValueError in one line when the spec cannot be one."""
    if not isinstance(spec, PartitionerSpec):
        raise ValueError(f"a partitioner plug-in is a stamen.PartitionerSpec, got {type(spec).__name__}")
    if not _NAME.fullmatch(spec.name) or spec.name == CROSS_DATASET:
        raise ValueError(f"partitioner name {spec.name!r} must be lower-case letters, digits and -")
    if not _FUNCTION.fullmatch(spec.function):
        raise ValueError(f"partitioner {spec.name!r}: function must name module:function, got {spec.function!r}")
    PARTITIONER_SPECS.add(spec.name, spec, origin)
    return spec


PARTITIONER_SPECS: Registry[PartitionerSpec] = Registry("partitioner", "stamen.partitioners", register_partitioner)


def partitioners() -> tuple[str, ...]:
    """The registered partitioners, in registry order."""
    return tuple(PARTITIONER_SPECS)


def graph_set_partitioners() -> tuple[str, ...]:
    """The partitioners that share out a graph set's graphs (their spec's ``graphs``), in registry order."""
    return tuple(name for name, spec in PARTITIONER_SPECS.items() if spec.graphs)


class _RunPartitioners(Mapping[str, str]):
    """The run config's ``partitioner`` choices with their help, read live: the registry's, then
    ``cross-dataset`` (a dataset list's deal, :mod:`stamen.graphs.cross_dataset`)."""

    def _all(self) -> dict[str, str]:
        helps = {name: spec.help for name, spec in PARTITIONER_SPECS.items()}
        return {**helps, CROSS_DATASET: "one dataset of a dataset list per client (graph sets joined by '+')"}

    def __getitem__(self, name: str) -> str:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


RUN_PARTITIONERS: Mapping[str, str] = _RunPartitioners()


def resolve(path: str) -> Any:
    """The object ``module:attribute`` names (the module imported on first use)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)
