"""``tu:NAME``: a set of small graphs in the TU layout, read with numpy (never unpickled).

The TU graph-kernel benchmarks (MUTAG, PROTEINS, ...) ship as text files, which PyG's
``TUDataset(root='<root>', name='NAME')`` places under ``<root>/NAME/raw/``; Stamen reads
those files and never PyG's processed ``.pt`` files (torch pickles):

- ``NAME_A.txt``: one edge ``i, j`` a line, 1-based node ids over all graphs (required);
- ``NAME_graph_indicator.txt``: node ``i``'s graph id, 1-based, one a line (required);
- ``NAME_graph_labels.txt``: graph ``g``'s class, any integers, one a line (required);
- ``NAME_node_labels.txt``: a node's discrete label (optional: one-hot features);
- ``NAME_node_attributes.txt``: a node's comma-separated real attributes (optional).

Features are the attributes, then the node labels one-hot; with neither, a one-hot of the
node's degree capped at :data:`stamen.graphs.graph_sets.MAX_DEGREE`, as ``graphs-synth`` has.
Graph labels are renumbered ``0..C-1`` in sorted order; edges are made undirected,
self-loops and duplicates dropped. Every count and id range is checked before use: a file
that does not fit is a one-line ``ValueError`` naming it and what is wrong.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

from stamen.graphs.graph_sets import MAX_DEGREE
from stamen.graphs.sources import Source

REQUIRED = ("A", "graph_indicator", "graph_labels")
OPTIONAL = ("node_labels", "node_attributes")


def tu_source(name: str, root: Path) -> Source:
    """The required files of ``tu:NAME`` (``name``) under data root ``root``."""
    stem = name.partition(":")[2]
    return Source(name, root / stem / "raw", tuple(f"{stem}_{part}.txt" for part in REQUIRED))


def read_tu_folder(source: Source) -> list[Data]:
    """The graphs of ``source`` (``x``, ``edge_index``, ``y`` of shape ``(1,)``), see the module docstring.

    Raises:
        FileNotFoundError: a required file is missing (one line naming it and the folder).
        ValueError: a file is not numbers, or its counts or ids do not fit the others (one line).
    """
    source.require()
    stem = source.folder.parent.name
    path = {part: source.folder / f"{stem}_{part}.txt" for part in (*REQUIRED, *OPTIONAL)}
    edges = _table(path["A"], np.int64, source.name)
    indicator = _column(path["graph_indicator"], source.name)
    graph_labels = _column(path["graph_labels"], source.name)
    num_nodes, num_graphs = indicator.size, graph_labels.size

    def bad(part: str, what: str) -> ValueError:
        return ValueError(f"dataset {source.name!r}: {path[part].name} {what}")

    if num_graphs == 0 or num_nodes == 0:
        raise bad("graph_labels" if num_graphs == 0 else "graph_indicator", "is empty")
    if edges.size and edges.shape[1] != 2:
        raise bad("A", f"has {edges.shape[1]} columns; it needs two (i, j) a line")
    if edges.size and (edges.min() < 1 or edges.max() > num_nodes):
        raise bad("A", f"has node ids outside 1..{num_nodes} (the nodes of {path['graph_indicator'].name})")
    if indicator.min() < 1 or indicator.max() > num_graphs:
        labels_file = path["graph_labels"].name
        raise bad("graph_indicator", f"has graph ids outside 1..{num_graphs} (the lines of {labels_file})")
    if np.any(np.diff(indicator) < 0):
        raise bad("graph_indicator", "is not sorted: each graph's nodes must be consecutive")
    sizes = np.bincount(indicator - 1, minlength=num_graphs)
    if np.any(sizes == 0):
        raise bad("graph_indicator", f"gives graph {int(np.argmin(sizes)) + 1} no node")
    edges = edges.reshape(-1, 2) - 1
    if np.any(indicator[edges[:, 0]] != indicator[edges[:, 1]]):
        raise bad("A", "has an edge between nodes of two graphs")
    x = _features(path, num_nodes, edges, source.name, bad)
    _, y = np.unique(graph_labels, return_inverse=True)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    graphs = []
    for g in range(num_graphs):
        lo, hi = int(starts[g]), int(starts[g + 1])
        inside = edges[(edges[:, 0] >= lo) & (edges[:, 0] < hi)] - lo
        inside = inside[inside[:, 0] != inside[:, 1]]
        both = np.unique(np.concatenate([inside, inside[:, ::-1]]), axis=0)
        graphs.append(
            Data(
                x=torch.from_numpy(x[lo:hi]),
                edge_index=torch.from_numpy(np.ascontiguousarray(both.T)),
                y=torch.tensor([int(y[g])], dtype=torch.long),
                num_nodes=hi - lo,
            )
        )
    return graphs


def _features(
    path: dict[str, Path], num_nodes: int, edges: np.ndarray, name: str, bad: Callable[[str, str], ValueError]
) -> np.ndarray:
    """The node features (see the module docstring); ``bad(part, what)``: the error naming a file's problem."""
    columns = []
    if path["node_attributes"].is_file():
        attributes = _table(path["node_attributes"], np.float32, name)
        if attributes.shape[0] != num_nodes or not np.all(np.isfinite(attributes)):
            raise bad("node_attributes", f"needs {num_nodes} lines of finite numbers (one a node)")
        columns.append(attributes)
    if path["node_labels"].is_file():
        labels = _column(path["node_labels"], name)
        if labels.size != num_nodes:
            raise bad("node_labels", f"has {labels.size} lines for {num_nodes} nodes")
        _, index = np.unique(labels, return_inverse=True)
        columns.append(np.eye(int(index.max()) + 1, dtype=np.float32)[index])
    if not columns:
        degree = np.bincount(edges[edges[:, 0] != edges[:, 1]].ravel(), minlength=num_nodes) // 2
        columns.append(np.eye(MAX_DEGREE + 1, dtype=np.float32)[np.minimum(degree, MAX_DEGREE)])
    return np.ascontiguousarray(np.concatenate(columns, axis=1), dtype=np.float32)


def _table(path: Path, dtype: type, name: str) -> np.ndarray:
    """A comma-separated numeric file as a 2-D array (no row: shape ``(0, 0)``)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy warns about an empty file: an empty table here
            table = np.loadtxt(path, delimiter=",", dtype=dtype, ndmin=2)
    except (ValueError, OSError) as error:
        kind = "integers" if dtype is np.int64 else "numbers"
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ValueError(f"dataset {name!r}: {path.name} is not comma-separated {kind} ({detail})") from None
    return table


def _column(path: Path, name: str) -> np.ndarray:
    table = _table(path, np.int64, name)
    if table.size and table.shape[1] != 1:
        raise ValueError(f"dataset {name!r}: {path.name} has {table.shape[1]} columns; it needs one number a line")
    return table.reshape(-1)
