"""Small graphs written in each file layout Stamen reads (a few dozen nodes): the ``files`` fixture."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp


class Graph:
    """A small directed multigraph with a self-loop and a duplicate edge, count features and labels."""

    def __init__(self, seed: int = 0, nodes: int = 30, features: int = 8, classes: int = 3, edges: int = 80) -> None:
        rng = np.random.default_rng(seed)
        self.y = np.arange(nodes) % classes
        self.x = (rng.random((nodes, features)) < 0.4) * rng.integers(1, 4, (nodes, features))
        # mostly within a class, so that a GCN has something to learn
        src = rng.integers(0, nodes, edges)
        dst = np.where(rng.random(edges) < 0.8, (src + classes * rng.integers(1, 4, edges)) % nodes, src[::-1])
        self.edges = np.concatenate([np.stack([src, dst]), [[0, 1, 1], [0, 2, 2]]], axis=1)  # self-loop 0-0, 1-2 twice
        self.nodes, self.classes = nodes, classes

    def undirected_pairs(self) -> set[tuple[int, int]]:
        return {(int(u), int(v)) for a, b in self.edges.T for u, v in ((a, b), (b, a)) if a != b}

    def adjacency(self) -> sp.csr_matrix:
        data = np.ones(self.edges.shape[1], dtype=np.float32)
        return sp.csr_matrix((data, (self.edges[0], self.edges[1])), shape=(self.nodes, self.nodes))

    def attributes(self) -> sp.csr_matrix:
        return sp.csr_matrix(self.x.astype(np.float32))


def _parts(prefix: str, matrix: sp.csr_matrix) -> dict[str, np.ndarray]:
    return {
        f"{prefix}data": matrix.data,
        f"{prefix}indices": matrix.indices,
        f"{prefix}indptr": matrix.indptr,
        f"{prefix}shape": np.array(matrix.shape),
    }


def write_benchmark_npz(
    path: Path, graph: Graph, *, dense: bool = False, csr_labels: bool = False, extra: dict | None = None
) -> Path:
    """The GNN-benchmark layout (``adj_data`` ...), with the object members the real files carry."""
    arrays = _parts("adj_", graph.adjacency())
    if dense:
        arrays["attr_matrix"] = graph.x.astype(np.float32)
    else:
        arrays.update(_parts("attr_", graph.attributes()))
    if csr_labels:
        one_hot = sp.csr_matrix((np.ones(graph.nodes), (np.arange(graph.nodes), graph.y)))
        arrays.update(_parts("labels_", one_hot))
    else:
        arrays["labels"] = graph.y
    arrays["node_names"] = np.array([f"node{i}" for i in range(graph.nodes)], dtype=object)
    arrays["idx_to_class"] = np.array({i: f"class{i}" for i in range(graph.classes)}, dtype=object)
    arrays.update(extra or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    return path


def write_dotted_npz(path: Path, graph: Graph) -> Path:
    """The graph-robustness layout of Cora-ML (``adj_matrix.data`` ...)."""
    arrays = {**_parts("adj_matrix.", graph.adjacency()), **_parts("attr_matrix.", graph.attributes())}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, labels=graph.y, **arrays)
    return path


def write_wikics(path: Path, graph: Graph) -> Path:
    links: list[list[int]] = [[] for _ in range(graph.nodes)]
    for a, b in graph.edges.T:
        links[int(a)].append(int(b))
    content = {
        "features": graph.x.astype(float).tolist(),
        "labels": graph.y.tolist(),
        "links": links,
        "train_masks": [[True] * graph.nodes],
        "test_mask": [False] * graph.nodes,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))
    return path


def write_gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as file:
        file.write(text)


def write_ogb(folder: Path, graph: Graph, labels: np.ndarray | None = None) -> Path:
    """``<folder>/raw/*.csv.gz`` as OGB unpacks an ogbn dataset (and a split folder, never read)."""
    raw = folder / "raw"
    write_gz(raw / "edge.csv.gz", "".join(f"{a},{b}\n" for a, b in graph.edges.T))
    write_gz(raw / "node-feat.csv.gz", "".join(",".join(f"{v:.1f}" for v in row) + "\n" for row in graph.x))
    labels = graph.y[:, None] if labels is None else labels
    write_gz(raw / "node-label.csv.gz", "".join(",".join(str(v) for v in row) + "\n" for row in labels))
    write_gz(raw / "num-node-list.csv.gz", f"{graph.nodes}\n")
    write_gz(folder / "split" / "time" / "train.csv.gz", "0\n1\n")
    return raw


@pytest.fixture
def files() -> SimpleNamespace:
    """The writers above and :class:`Graph`, for tests under ``tests/graphs``."""
    return SimpleNamespace(
        Graph=Graph,
        benchmark_npz=write_benchmark_npz,
        dotted_npz=write_dotted_npz,
        wikics=write_wikics,
        ogb=write_ogb,
        gz=write_gz,
    )
