"""Planetoid citation graphs (Cora, CiteSeer, PubMed) from their raw files, checked.

The raw layout (Yang et al. 2016) is eight files ``ind.<name>.<part>``:

- ``allx``, ``ally``: features and one-hot labels of nodes ``0 .. a-1`` (every node
  that is not a test node); ``x``, ``y``: those of the training nodes, the first rows;
- ``tx``, ``ty``: features and labels of the ``T`` test nodes, row ``i`` belonging to
  node ``test.index[i]``;
- ``test.index``: text, one node id per line; the ids are ``a .. a+T-1`` in some order.
  CiteSeer's have gaps: 15 isolated nodes that appear in no feature file;
- ``graph``: ``{node: [neighbours]}``.

Assembly gives what PyG's ``Planetoid`` gives: ``n = max(test.index) + 1`` nodes (``a``
without test nodes); node ``v < a`` takes row ``v`` of ``allx``/``ally``, node
``test.index[i]`` row ``i`` of ``tx``/``ty``, and a gap node zero features and label 0;
``y`` is the position of the 1 in each label row; ``edge_index`` lists every
``(node, neighbour)`` pair without self-loops and duplicates, in PyG's coalesced order.

The pickles are read as data by :mod:`stamen.graphs.data_pickle` (nothing in them runs). Before
assembly the files must agree, or a one-line :class:`ValueError` names the file and
the mismatch: paired files have equal row counts, feature and label widths agree, the
training rows fit in ``allx``, label rows are one-hot, ``test.index`` has one unique id
per ``tx`` row starting at ``a`` (contiguous except CiteSeer's), and every node of
``graph`` lies in ``[0, n)``. A truncated ``test.index``, which would otherwise shift
features against labels silently, is caught by the first of these.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import chain, repeat
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops

from stamen.graphs.csr import check_dense_size
from stamen.graphs.data_pickle import check_size, read_adjacency, read_matrix

RAW_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
GAPPED_TEST_IDS = frozenset({"citeseer"})  # isolated test nodes missing from tx/ty (PyG's special case)

_MATRICES = ("x", "tx", "allx", "y", "ty", "ally")
T = TypeVar("T")


def read_planetoid(folder: Path, name: str, label: str | None = None) -> Data:
    """The graph ``name`` (``cora``, ``citeseer``, ``pubmed``) from ``folder``'s raw files.

    ``label`` is the dataset as the user named it, for messages (default ``name``).

    Returns ``Data`` with ``x`` (float32), ``y`` (long), ``edge_index`` and ``num_classes``.

    Raises:
        FileNotFoundError: raw files are missing (named).
        ValueError: a file is unreadable, foreign or inconsistent with the others (one line).
    """
    paths = {part: folder / f"ind.{name}.{part}" for part in RAW_PARTS}
    label = label or name
    missing = [path.name for path in paths.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(
            f"dataset {label!r}: raw files missing under {folder} ({', '.join(missing)}); "
            "Stamen never downloads: copy the Planetoid raw files there"
        )
    try:
        matrices = {part: _read(paths[part], read_matrix) for part in _MATRICES}
        graph = _read(paths["graph"], read_adjacency)
        test_index = _read(paths["test.index"], _read_index)
        num_nodes = _check_layout(name, matrices, test_index, graph)
    except ValueError as error:
        raise ValueError(
            f"dataset {label!r}: could not read the raw files in {folder}: {error}; "
            "replace them with an intact copy of the Planetoid raw files"
        ) from error
    return _assemble(matrices, test_index, graph, num_nodes)


def _read(path: Path, reader: Callable[[Path], T]) -> T:
    try:
        return reader(path)
    except ValueError as error:
        raise ValueError(f"{path.name}: {error}") from error


def _read_index(path: Path) -> np.ndarray:
    check_size(path)
    try:
        lines = path.read_bytes().splitlines()
    except OSError as error:
        raise ValueError(f"cannot read it ({error.strerror or error})") from error
    ids = []
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        if not re.fullmatch(rb"\d{1,12}", line):
            raise ValueError(f"line {number} is not a node id")
        ids.append(int(line))
    return np.asarray(ids, dtype=np.int64)


def _check_layout(name: str, m: dict[str, np.ndarray], test_index: np.ndarray, graph: dict[int, list[int]]) -> int:
    """Raise a ``ValueError`` on the first inconsistency; return the number of nodes."""
    file = {part: f"ind.{name}.{part}" for part in RAW_PARTS}
    for features, labels in (("x", "y"), ("tx", "ty"), ("allx", "ally")):
        if m[features].shape[0] != m[labels].shape[0]:
            raise ValueError(
                f"{file[labels]} has {m[labels].shape[0]} rows but {file[features]} has {m[features].shape[0]}"
            )
    for group in (("x", "tx", "allx"), ("y", "ty", "ally")):
        widths = {part: m[part].shape[1] for part in group}
        if len(set(widths.values())) > 1:
            columns = ", ".join(f"{file[part]} {width}" for part, width in widths.items())
            raise ValueError(f"these files must have equal column counts: {columns}")
    for part in ("x", "tx", "allx"):
        if m[part].dtype.kind == "f" and not np.all(np.isfinite(m[part])):
            raise ValueError(f"{file[part]} holds NaN or infinite features")
    for part in ("y", "ty", "ally"):
        bad = np.flatnonzero(~(np.isin(m[part], (0, 1)).all(axis=1) & (m[part].sum(axis=1) == 1)))
        if bad.size:
            raise ValueError(f"{file[part]} row {int(bad[0])} is not one-hot (each label row needs exactly one 1)")
    known = m["allx"].shape[0]
    if m["x"].shape[0] > known:
        raise ValueError(f"{file['x']} has {m['x'].shape[0]} training rows but {file['allx']} only {known}")
    tests = m["tx"].shape[0]
    if test_index.size != tests:
        raise ValueError(f"{file['test.index']} has {test_index.size} entries but {file['tx']} has {tests} rows")
    if tests:
        unique, counts = np.unique(test_index, return_counts=True)
        if unique.size != test_index.size:
            raise ValueError(f"{file['test.index']} lists node {int(unique[counts > 1][0])} more than once")
        if int(unique[0]) != known:
            raise ValueError(
                f"{file['test.index']} starts at node {int(unique[0])}, "
                f"but test nodes follow the {known} of {file['allx']}"
            )
        if name not in GAPPED_TEST_IDS and int(unique[-1]) != known + tests - 1:
            raise ValueError(f"{file['test.index']} skips node ids between {known} and {int(unique[-1])}")
    num_nodes = int(test_index.max()) + 1 if tests else known
    check_dense_size(num_nodes, max(m["allx"].shape[1], m["ally"].shape[1]))
    for node, neighbours in graph.items():
        outside = [v for v in (node, *neighbours) if not 0 <= v < num_nodes]
        if outside:
            raise ValueError(f"{file['graph']} names node {outside[0]} but the graph has {num_nodes} nodes")
    return num_nodes


def _assemble(m: dict[str, np.ndarray], test_index: np.ndarray, graph: dict[int, list[int]], num_nodes: int) -> Data:
    known = m["allx"].shape[0]
    x = np.zeros((num_nodes, m["allx"].shape[1]), dtype=np.float32)
    x[:known] = m["allx"]
    x[test_index] = m["tx"]
    labels = np.zeros((num_nodes, m["ally"].shape[1]), dtype=np.int64)
    labels[:known] = m["ally"]
    labels[test_index] = m["ty"]
    rows = np.fromiter(chain.from_iterable(repeat(node, len(ns)) for node, ns in graph.items()), dtype=np.int64)
    cols = np.fromiter(chain.from_iterable(graph.values()), dtype=np.int64)
    edge_index, _ = remove_self_loops(torch.from_numpy(np.stack([rows, cols])))
    edge_index = coalesce(edge_index, num_nodes=num_nodes, sort_by_row=False)
    return Data(
        x=torch.from_numpy(x),
        edge_index=edge_index,
        y=torch.from_numpy(labels.argmax(axis=1)),
        num_classes=int(m["ally"].shape[1]),
    )
