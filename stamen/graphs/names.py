"""The names a run config may use for datasets and partitioners.

Kept free of heavy imports so that a process that only checks a config (the
ServerApp, the CLI's parser) never loads PyTorch Geometric.

A dataset is a fixed name (:data:`DATASETS`) or one of three forms that name files
under the data root (:data:`DATASET_FORMS`; where each reads from: :mod:`stamen.graphs.sources`):

- ``npz:STEM``: ``<root>/npz/STEM.npz`` in a graph ``.npz`` layout (:mod:`stamen.graphs.npz_graph`);
- ``pyg:CLASS/NAME`` (``pyg:WikiCS`` without a name): the raw files of a PyG dataset
  class, read by Stamen's own readers. Only the classes of :data:`PYG` are accepted:
  those whose raw files are data Stamen can read without PyG's processing, which
  would unpickle its processed ``.pt`` files;
- ``ogb:ogbn-NAME``: an OGB node-property folder ``<root>/ogbn_NAME/raw/*.csv.gz``
  (:mod:`stamen.graphs.ogb_folder`), read without the ``ogb`` package;
- ``tu:NAME``: a set of small graphs in the TU layout, ``<root>/NAME/raw/NAME_*.txt`` as PyG's
  ``TUDataset`` places it (:mod:`stamen.graphs.tu_folder`), for graph classification only.

*Graph sets* (:data:`GRAPH_SETS` and ``tu:NAME``, :func:`is_graph_set`) are many small graphs
with a class each, which the clients share out graph by graph; every other dataset is one
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

from stamen.common.registry import PYTHON, Registry

PLANETOID = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
DATASETS = ("csbm", *PLANETOID, "cora_ml")
GRAPH_SETS = ("graphs-synth",)  # generated from the seed, no files (stamen/graphs/graph_sets.py)
CROSS_DATASET = "cross-dataset"  # one dataset of a dataset list per client (stamen.graphs.cross_dataset)
DEFAULT_PARTITIONER = "louvain"  # the run config's default (Flower's app config holds it too)
LIST_SEPARATOR = "+"

# PyG class -> its dataset names (empty: the class holds one dataset and takes no name).
PYG: dict[str, tuple[str, ...]] = {
    "Amazon": ("Computers", "Photo"),
    "Coauthor": ("CS", "Physics"),
    "CitationFull": ("Cora", "Cora_ML", "CiteSeer", "DBLP", "PubMed"),
    "Planetoid": ("Cora", "CiteSeer", "PubMed"),
    "WikiCS": (),
}
DATASET_FORMS = ("npz:STEM", "pyg:CLASS/NAME", "ogb:ogbn-NAME", "tu:NAME")

NPZ_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
OGB_NAME = re.compile(r"ogbn-[A-Za-z0-9]{1,40}")
TU_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


def is_graph_set(name: str) -> bool:
    """Whether dataset ``name`` is a set of small graphs (graph classification's), not one graph; a dataset
    list is one when each of its parts is."""
    return all(part in GRAPH_SETS or part.startswith("tu:") for part in dataset_parts(name))


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


def pyg_datasets() -> list[str]:
    """Every accepted ``pyg:`` dataset, as written in a run config."""
    return [f"pyg:{cls}/{name}" if name else f"pyg:{cls}" for cls, names in PYG.items() for name in names or ("",)]


def accepted_datasets(also: tuple[str, ...] = (), graph_sets: bool = True) -> str:
    """Every accepted dataset name and form, in words (one line, for help texts); ``also``: a
    caller's own names first (``stamen certify``'s ``csbm-paper``); ``graph_sets``: the graph sets too."""
    classes = ", ".join(f"{cls}/{'|'.join(names)}" if names else cls for cls, names in PYG.items())
    sets = f"; graph sets: {', '.join(GRAPH_SETS)}, tu:NAME, and lists of them joined by '+'" if graph_sets else ""
    return f"{', '.join((*also, *DATASETS))}, npz:STEM, ogb:ogbn-NAME, pyg:CLASS/NAME ({classes}){sets}"


def dataset_problem(name: str, also: tuple[str, ...] = (), graph_sets: bool = True) -> str | None:
    """What is wrong with the dataset name ``name`` (one line naming what to write), or ``None``.

    ``also``: names a caller accepts besides the datasets (``stamen certify``'s ``csbm-paper``);
    ``graph_sets``: whether the caller reads graph sets (``stamen certify`` reads one graph).
    A dataset list: each part as its single form, named (see the module docstring).
    """
    if is_dataset_list(name):
        return _list_problem(name, also, graph_sets)
    if not graph_sets and is_graph_set(name):
        one_graph = accepted_datasets(also, graph_sets=False)
        return f"dataset {name!r} is a set of small graphs (graph classification's); give one graph: {one_graph}"
    prefix, colon, rest = name.partition(":")
    if not colon:
        names = (*also, *DATASETS, *GRAPH_SETS)
        if name in names:
            return None
        return (
            f"unknown dataset {name!r}; dataset must be one of: {', '.join((*names, *DATASET_FORMS))}"
            f"{_did_you_mean(name, names)}"
        )
    if prefix == "npz":
        if NPZ_STEM.fullmatch(rest) and not rest.endswith(".npz"):
            return None
        return (
            f"dataset {name!r}: npz:STEM takes a file stem (letters, digits, _ . -; no folder, no .npz) "
            "and reads <root>/npz/STEM.npz"
        )
    if prefix == "ogb":
        if OGB_NAME.fullmatch(rest):
            return None
        return f"dataset {name!r}: ogb: takes an OGB node-property dataset name such as ogbn-arxiv"
    if prefix == "tu":
        if TU_NAME.fullmatch(rest):
            return None
        return (
            f"dataset {name!r}: tu:NAME takes a TU dataset name (letters, digits, _ -; no folder) "
            "and reads <root>/NAME/raw/NAME_*.txt"
        )
    if prefix == "pyg":
        cls, slash, sub = rest.partition("/")
        if cls in PYG and ((not PYG[cls] and not slash) or sub in PYG[cls]):
            return None
        return (
            f"unknown dataset {name!r}; Stamen reads the raw files of these PyG datasets only: "
            f"{', '.join(pyg_datasets())}{_did_you_mean(name, pyg_datasets())}"
        )
    return f"unknown dataset form {prefix + ':'!r} in {name!r}; the forms are {', '.join(DATASET_FORMS)}"


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
                f"sets ({', '.join(GRAPH_SETS)}, tu:NAME) to the clients of task 'graph-classification': {how}"
            )
        if part in seen:
            return f"dataset list {name!r}: part {number} ({part!r}) is listed twice (the same graphs twice); {how}"
        seen.add(part)
    return None


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
