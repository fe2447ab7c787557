"""Wiki-CS (Mernyei and Cangea 2020) from its raw ``data.json``, checked.

The file is one JSON object; Stamen reads three of its members:

- ``features``: ``n`` lists of ``d`` numbers (a node's features);
- ``labels``: ``n`` class ids, from 0;
- ``links``: ``n`` lists, list ``i`` holding the neighbours of node ``i``.

The split masks (``train_masks``, ``val_masks``, ``test_mask``, ``stopping_masks``) are
ignored: Stamen splits each client's nodes itself. JSON is data, so nothing in the
file runs; a file that is not JSON, lacks a member or whose members disagree (ragged
features, a label per node, neighbours in ``[0, n)``) is a one-line :class:`ValueError`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data

from stamen.graphs.csr import check_dense_size

MEMBERS = ("features", "labels", "links")


def read_wikics(path: Path, name: str) -> Data:
    """The graph in Wiki-CS's ``data.json`` at ``path``.

    Raises:
        ValueError: the file is not JSON or not Wiki-CS's layout (one line naming it).
    """
    try:
        x, y, edge_index = _parse(path)
    except (ValueError, TypeError, OverflowError, RecursionError, OSError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(
            f"dataset {name!r}: {path} is not a readable Wiki-CS data.json ({reason}); replace it with an intact copy"
        ) from error
    return Data(
        x=torch.from_numpy(x),
        edge_index=torch.from_numpy(edge_index),
        y=torch.from_numpy(y),
        num_classes=int(y.max()) + 1 if y.size else 0,
    )


def _parse(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with path.open("rb") as file:
        content = json.load(file)
    if not isinstance(content, dict):
        raise ValueError("it is not a JSON object")
    missing = [member for member in MEMBERS if member not in content]
    if missing:
        raise ValueError(f"missing members {', '.join(missing)}")
    features, labels, links = (content[member] for member in MEMBERS)
    if not all(isinstance(value, list) for value in (features, labels, links)):
        raise ValueError("features, labels and links must be lists")
    num_nodes = len(features)
    width = len(features[0]) if features and isinstance(features[0], list) else 0
    check_dense_size(num_nodes, width)
    if not all(isinstance(row, list) and len(row) == width for row in features):
        raise ValueError(f"features is not {num_nodes} lists of {width} numbers")
    x = np.asarray(features, dtype=np.float32).reshape(num_nodes, width)
    if not np.all(np.isfinite(x)):
        raise ValueError("features holds NaN or infinite values")
    if len(labels) != num_nodes or not all(type(label) is int and label >= 0 for label in labels):
        raise ValueError(f"labels is not {num_nodes} non-negative integers")
    if len(links) != num_nodes or not all(isinstance(row, list) for row in links):
        raise ValueError(f"links is not {num_nodes} lists of neighbours")
    targets = [v for row in links for v in row]
    if not all(type(v) is int and 0 <= v < num_nodes for v in targets):
        raise ValueError(f"links names a node outside [0, {num_nodes})")
    sources = np.repeat(np.arange(num_nodes, dtype=np.int64), [len(row) for row in links])
    return x, np.asarray(labels, dtype=np.int64), np.stack([sources, np.asarray(targets, dtype=np.int64)])
