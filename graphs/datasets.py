"""Dataset loaders: every graph enters Stamen here as a ``torch_geometric.data.Data``.

A loaded graph has ``x`` (float32, n x d), ``edge_index`` (2 x E, undirected: both
directions present, no self-loops, no duplicates), ``y`` (long, n), ``num_classes``
and ``name``.

Files are read from a *data root* (argument ``root``, else the environment variable
``STAMEN_DATA``) and never written: a root may be read-only (a shared folder, CI).
Nothing is ever downloaded; missing files are named in the error. Files are read as
data, never unpickled with code: Planetoid's raw pickles by :mod:`graphs.planetoid`,
graph archives by :mod:`graphs.npz_graph`; a damaged, foreign or inconsistent file is a
one-line ``ValueError`` naming it. Stamen's own derived files (partitions) go to a
writable cache under ``STAMEN_CACHE`` (default ``~/.cache/stamen``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

from graphs.csbm import make_csbm
from graphs.names import DATASETS, PLANETOID
from graphs.npz_graph import read_npz_graph
from graphs.planetoid import read_planetoid


def data_root(root: str | os.PathLike | None) -> Path | None:
    """The data root to read from: ``root`` if given, else ``$STAMEN_DATA``, else none."""
    chosen = root if root not in (None, "") else os.environ.get("STAMEN_DATA")
    return Path(chosen).expanduser().resolve() if chosen else None


def cache_dir() -> Path:
    """A writable folder for Stamen's derived files (``$STAMEN_CACHE`` or ``~/.cache/stamen``)."""
    path = Path(os.environ.get("STAMEN_CACHE", Path.home() / ".cache" / "stamen"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_dataset(
    name: str,
    root: str | os.PathLike | None = None,
    seed: int = 0,
    **options: float | int,
) -> Data:
    """Load a graph by name.

    Args:
        name: one of :data:`DATASETS`.
        root: data root holding the raw files (ignored by ``csbm``).
        seed: seed of generated datasets (``csbm``); file datasets ignore it.
        **options: generator options of ``csbm`` (see :func:`graphs.csbm.make_csbm`).

    Raises:
        ValueError: unknown dataset name, bad generator option, or a file that is damaged,
            foreign or inconsistent (one line naming it).
        FileNotFoundError: the raw files are not under the data root.
    """
    loaders: dict[str, Callable[[], Data]] = {
        "csbm": lambda: make_csbm(seed=seed, **options),
        "cora_ml": lambda: read_npz_graph(_require_root(root, name) / "npz" / "cora_ml.npz", "cora_ml"),
        **{key: (lambda key=key: _read_planetoid(key, root)) for key in PLANETOID},
    }
    if name not in loaders:
        raise ValueError(f"unknown dataset {name!r}; choose one of: {', '.join(DATASETS)}")
    if options and name != "csbm":
        raise ValueError(f"dataset {name!r} takes no generator options (got {sorted(options)})")
    data = _canonical(loaders[name]())
    data.name = name
    return data


def _require_root(root: str | os.PathLike | None, name: str) -> Path:
    path = data_root(root)
    if path is None:
        raise FileNotFoundError(f"dataset {name!r} needs a data root: pass data-root (--data-root) or set STAMEN_DATA")
    return path


def _read_planetoid(key: str, root: str | os.PathLike | None) -> Data:
    return read_planetoid(_require_root(root, key) / PLANETOID[key] / "raw", key)


def _canonical(data: Data) -> Data:
    """Undirected, coalesced, self-loop-free edges; float32 features; plain int ``num_classes``."""
    edge_index, _ = remove_self_loops(data.edge_index)
    edge_index = coalesce(to_undirected(edge_index, num_nodes=data.num_nodes), num_nodes=data.num_nodes)
    return Data(
        x=data.x.float(),
        edge_index=edge_index,
        y=data.y.long(),
        num_classes=int(data.num_classes),
    )
