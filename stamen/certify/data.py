"""Certification instances: class selection, isolated nodes, labelled/target split.

Binary certification follows the paper: keep the two largest classes (or the two
given by ``classes``; the first becomes label ``+1``), take the induced subgraph and
drop nodes isolated in it. Labelled nodes are drawn per class with a seeded
generator; targets are drawn from the remaining nodes.
"""

from __future__ import annotations

import errno
import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Instance:
    """A graph ready for certification (node order = kernel order)."""

    x: np.ndarray  # (n, d) float64
    edge_index: np.ndarray  # (2, E) int64
    y: np.ndarray  # (n,) class index 0..c-1 (binary: 0 = first class = +1)
    num_classes: int
    labeled: np.ndarray  # indices into 0..n-1
    targets: np.ndarray
    class_names: list[int]  # original class id of each class index
    node_ids: np.ndarray  # original node id of each node

    @property
    def n(self) -> int:
        return self.x.shape[0]

    def pm_labels(self, idx: np.ndarray) -> np.ndarray:
        """+-1 labels of binary instances (class 0 -> +1, class 1 -> -1)."""
        return np.where(self.y[idx] == 0, 1.0, -1.0)


def _as_numpy(data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = data.x.detach().cpu().numpy() if hasattr(data.x, "detach") else np.asarray(data.x)
    ei = data.edge_index.detach().cpu().numpy() if hasattr(data.edge_index, "detach") else np.asarray(data.edge_index)
    y = data.y.detach().cpu().numpy() if hasattr(data.y, "detach") else np.asarray(data.y)
    return x.astype(np.float64), ei.astype(np.int64), y.astype(np.int64)


# what numpy and zipfile raise on a damaged archive: a bad header, CRC or deflate stream, a flag bit read as an
# unsupported compression method or as encryption
_DAMAGED = (ValueError, EOFError, KeyError, NotImplementedError, RuntimeError, zipfile.BadZipFile, zlib.error)


def load_graph_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Read ``--graph`` files: arrays ``x``, ``edge_index``, ``y``, ``labeled``, ``targets``."""
    path = Path(path)
    if not path.is_file():
        what = "is not a regular file" if os.path.lexists(path) else "not found"
        raise FileNotFoundError(f"graph file {what}: {path}")
    try:
        with np.load(path, allow_pickle=False) as f:
            missing = [k for k in ("x", "edge_index", "y", "labeled", "targets") if k not in f]
            arrays = {} if missing else {k: np.asarray(f[k]) for k in ("x", "edge_index", "y", "labeled", "targets")}
    except (*_DAMAGED, OSError) as error:  # a damaged or foreign file
        if isinstance(error, OSError) and error.errno != errno.EINVAL:
            raise  # the machine's failure, not the file's (EINVAL: a damaged header seeks before the file's start)
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(f"{path} is not a readable --graph .npz ({reason}); give an intact .npz file") from None
    if missing:
        raise ValueError(
            f"{path} lacks arrays {', '.join(missing)}; a --graph file needs x (n x d), "
            "edge_index (2 x E), y (n), labeled (indices) and targets (indices)"
        )
    x, ei, y = arrays["x"], arrays["edge_index"], arrays["y"]
    if x.ndim != 2:
        raise ValueError(f"x must be n x d, got shape {x.shape}")
    n = x.shape[0]
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must be 2 x E, got shape {ei.shape}")
    if ei.size and (ei.min() < 0 or ei.max() >= n):
        raise ValueError(f"edge_index refers to nodes outside 0..{n - 1}")
    if y.shape != (n,):
        raise ValueError(f"y must have one label per node ({n}), got shape {y.shape}")
    for key in ("labeled", "targets"):
        idx = arrays[key]
        if idx.ndim != 1 or idx.size == 0:
            raise ValueError(f"{key} must be a non-empty 1-D index array")
        if idx.min() < 0 or idx.max() >= n:
            raise ValueError(f"{key} has indices outside 0..{n - 1}")
        if len(np.unique(idx)) != idx.size:
            raise ValueError(f"{key} has repeated indices")
    if np.intersect1d(arrays["labeled"], arrays["targets"]).size:
        raise ValueError("labeled and targets overlap")
    return arrays


def select_classes(x, edge_index, y, classes: list[int] | None, binary: bool, drop_isolated: bool = True):
    """Restrict to ``classes`` (default: the two largest when ``binary``, else all) and
    drop nodes isolated in the induced subgraph. Returns arrays and bookkeeping."""
    present, counts = np.unique(y, return_counts=True)
    if classes is None:
        if binary:
            order = np.lexsort((present, -counts))  # largest first, ties by id
            classes = [int(present[order[0]]), int(present[order[1]])]
        else:
            classes = [int(c) for c in present]
    for c in classes:
        if c not in present:
            raise ValueError(f"class {c} does not occur; classes present: {', '.join(map(str, present))}")
    if len(set(classes)) != len(classes) or len(classes) < 2:
        raise ValueError("need at least two distinct classes")
    keep = np.isin(y, classes)
    remap = -np.ones(len(y), dtype=np.int64)
    remap[keep] = np.arange(int(keep.sum()))
    mask = keep[edge_index[0]] & keep[edge_index[1]]
    ei = remap[edge_index[:, mask]]
    ids = np.flatnonzero(keep)
    # drop isolated nodes of the induced subgraph (as the paper does)
    deg = np.bincount(ei[0], minlength=len(ids)) + np.bincount(ei[1], minlength=len(ids))
    loops = ei[0] == ei[1]
    deg -= 2 * np.bincount(ei[0, loops], minlength=len(ids))
    alive = deg > 0 if drop_isolated else np.ones(len(ids), dtype=bool)
    remap2 = -np.ones(len(ids), dtype=np.int64)
    remap2[alive] = np.arange(int(alive.sum()))
    ei = remap2[ei]
    ei = ei[:, (ei[0] >= 0) & (ei[1] >= 0) & (ei[0] != ei[1])]
    ids = ids[alive]
    cls_index = {c: i for i, c in enumerate(classes)}
    y_new = np.array([cls_index[int(v)] for v in y[ids]], dtype=np.int64)
    return x[ids], ei, y_new, classes, ids


def split(y: np.ndarray, per_class: int, num_targets: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``per_class`` labelled nodes per class; ``num_targets`` targets (0 = all the rest)."""
    rng = np.random.default_rng(seed)
    labeled = []
    for c in np.unique(y):
        members = np.flatnonzero(y == c)
        if len(members) <= per_class:
            raise ValueError(f"class {c} has {len(members)} nodes, need more than {per_class} labelled per class")
        labeled.append(rng.permutation(members)[:per_class])
    labeled = np.sort(np.concatenate(labeled))
    rest = np.setdiff1d(np.arange(len(y)), labeled)
    if num_targets and num_targets < len(rest):
        rest = np.sort(rng.permutation(rest)[:num_targets])
    return labeled, rest


def build_instance(
    data, classes=None, binary=True, per_class=10, num_targets=0, seed=0, drop_isolated=True
) -> Instance:
    """Instance from a torch_geometric ``Data`` (or any object with x, edge_index, y).

    ``drop_isolated=False`` keeps nodes without neighbours (the paper's CSBM runs do).
    """
    x, ei, y = _as_numpy(data)
    x, ei, y, names, ids = select_classes(x, ei, y, classes, binary, drop_isolated)
    labeled, targets = split(y, per_class, num_targets, seed)
    return Instance(x, ei, y, len(names), labeled, targets, names, ids)


def instance_from_arrays(arrays: dict[str, np.ndarray], classes=None, binary=True) -> Instance:
    """Instance from a ``--graph`` file; its labelled/target indices are kept as given.

    Nodes outside the selected classes must not be labelled or targets; isolated nodes
    are kept (the file fixes the node order of the kernel).
    """
    x = arrays["x"].astype(np.float64)
    y = arrays["y"].astype(np.int64)
    present = np.unique(y[np.concatenate([arrays["labeled"], arrays["targets"]])])
    if classes is None:
        if binary and len(present) > 2:
            raise ValueError(f"--graph labels/targets span classes {present.tolist()}; pass --classes a,b")
        classes = [int(c) for c in present]
    for key in ("labeled", "targets"):
        bad = ~np.isin(y[arrays[key]], classes)
        if bad.any():
            raise ValueError(f"{key} contains nodes of classes outside {classes}")
    cls_index = {c: i for i, c in enumerate(classes)}
    y_new = np.array([cls_index.get(int(v), -1) for v in y], dtype=np.int64)
    return Instance(
        x,
        arrays["edge_index"].astype(np.int64),
        y_new,
        len(classes),
        np.asarray(arrays["labeled"], np.int64),
        np.asarray(arrays["targets"], np.int64),
        list(classes),
        np.arange(len(y)),
    )


def client_instance(
    x: np.ndarray,
    edge_index: np.ndarray,
    y: np.ndarray,
    train_mask: np.ndarray,
    test_mask: np.ndarray,
    per_class: int,
    num_targets: int,
    seed: int,
) -> Instance | None:
    """A federated client's binary task on its own subgraph (``None``: nothing to certify).

    The two classes with the most training nodes (ties: the smaller class id; the first
    is ``+1``), the subgraph they induce without its isolated nodes (as
    :func:`build_instance`), up to ``per_class`` labelled training nodes per class and up
    to ``num_targets`` test nodes as targets, drawn with ``seed``. ``node_ids`` are the
    client's own node ids. ``None`` when fewer than two classes have training nodes or
    no test node is left.
    """
    y = np.asarray(y, dtype=np.int64)
    train_mask = np.asarray(train_mask, dtype=bool)
    test_mask = np.asarray(test_mask, dtype=bool)
    counts = np.bincount(y[train_mask], minlength=int(y.max()) + 1 if y.size else 0)
    classes = [int(c) for c in np.argsort(-counts, kind="stable")[:2]]
    if len(classes) < 2 or counts[classes[1]] == 0:
        return None
    x, ei, local_y, names, nodes = select_classes(
        np.asarray(x, dtype=np.float64), np.asarray(edge_index, dtype=np.int64), y, classes, binary=True
    )
    local_train, local_test = train_mask[nodes], test_mask[nodes]
    rng = np.random.default_rng(seed)
    # the second class draws first: the order of earlier versions, so a seed keeps its nodes
    labeled = np.concatenate(
        [rng.permutation(np.flatnonzero(local_train & (local_y == c)))[:per_class] for c in (1, 0)]
    )
    targets = rng.permutation(np.flatnonzero(local_test))[:num_targets]
    if targets.size == 0:
        return None
    return Instance(x, ei, local_y, 2, np.sort(labeled).astype(np.int64), targets.astype(np.int64), names, nodes)
