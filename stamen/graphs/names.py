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
"""

from __future__ import annotations

import difflib
import re

PLANETOID = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
DATASETS = ("csbm", *PLANETOID, "cora_ml")
GRAPH_SETS = ("graphs-synth",)  # generated from the seed, no files (stamen/graphs/graph_sets.py)
PARTITIONERS = ("louvain", "metis", "label-dirichlet", "random")  # over one dataset's nodes or graphs
CROSS_DATASET = "cross-dataset"  # one dataset of a dataset list per client (stamen.graphs.cross_dataset)
RUN_PARTITIONERS = (*PARTITIONERS, CROSS_DATASET)  # the run config's partitioner
GRAPH_SET_PARTITIONERS = ("label-dirichlet", "random")  # over graphs: the others cut one graph by its edges
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
