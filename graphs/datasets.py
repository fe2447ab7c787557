"""Dataset loaders: every graph enters Stamen here as a ``torch_geometric.data.Data``.

A loaded graph has ``x`` (float32, n x d), ``edge_index`` (2 x E, undirected: both
directions present, no self-loops, no duplicates), ``y`` (long, n), ``num_classes``
and ``name``.

Files are read from a *data root* (argument ``root``, else the environment variable
``STAMEN_DATA``). A root may be read-only (a shared folder, CI): whatever a loader
must write (PyG's processed files) goes to a writable cache under ``STAMEN_CACHE``
(default ``~/.cache/stamen``). Nothing is downloaded when the raw files are present;
when they are absent and there is no network, the error names the files to provide.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops, to_undirected

from graphs.csbm import make_csbm
from graphs.names import DATASETS, PLANETOID

PLANETOID_RAW_FILES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def data_root(root: str | os.PathLike | None) -> Path | None:
    """The data root to read from: ``root`` if given, else ``$STAMEN_DATA``, else none."""
    chosen = root if root not in (None, "") else os.environ.get("STAMEN_DATA")
    return Path(chosen).expanduser().resolve() if chosen else None


def cache_dir() -> Path:
    """A writable folder for processed data (``$STAMEN_CACHE`` or ``~/.cache/stamen``)."""
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
        ValueError: unknown dataset name or bad generator option.
        FileNotFoundError: the raw files are not under the data root.
    """
    loaders: dict[str, Callable[[], Data]] = {
        "csbm": lambda: make_csbm(seed=seed, **options),
        "cora_ml": lambda: _load_npz(_require_root(root, name) / "npz" / "cora_ml.npz", "cora_ml"),
        **{key: (lambda key=key: _load_planetoid(key, root)) for key in PLANETOID},
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


def _load_planetoid(key: str, root: str | os.PathLike | None) -> Data:
    from torch_geometric.datasets import Planetoid

    folder = PLANETOID[key]
    source = _require_root(root, key) / folder / "raw"
    raw_names = [f"ind.{folder.lower()}.{suffix}" for suffix in PLANETOID_RAW_FILES]
    missing = [n for n in raw_names if not (source / n).is_file()]
    if missing:
        raise FileNotFoundError(
            f"dataset {key!r}: raw files missing under {source} ({', '.join(missing)}); "
            "Stamen never downloads: copy the Planetoid raw files there"
        )
    # PyG writes processed/ next to raw/: mirror raw/ into the writable cache, in a
    # folder named by the files' content so that other raw files never meet stale
    # processed ones.
    digest = hashlib.sha256()
    for raw_name in raw_names:
        digest.update((source / raw_name).read_bytes())
    cache_root = cache_dir() / "planetoid" / digest.hexdigest()[:16]
    cached_raw = cache_root / folder / "raw"
    if not cached_raw.is_dir():
        staging = cache_root / folder / f"raw.{os.getpid()}"
        shutil.copytree(source, staging, dirs_exist_ok=True)
        try:
            staging.rename(cached_raw)
        except OSError:  # another process got there first with the same files
            shutil.rmtree(staging, ignore_errors=True)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            dataset = Planetoid(str(cache_root), folder)  # silences PyG's "Processing..."
    except Exception as error:  # a truncated or foreign file fails deep inside PyG
        raise ValueError(f"dataset {key!r}: could not read the raw files in {source}: {error}") from error
    data = dataset[0]
    data.num_classes = dataset.num_classes
    return data


def _load_npz(path: Path, name: str) -> Data:
    """Read the sparse-matrix ``.npz`` layout of the graph-robustness literature."""
    if not path.is_file():
        raise FileNotFoundError(f"dataset {name!r}: file {path} not found")
    try:
        with np.load(path, allow_pickle=False) as archive:
            adjacency = _csr(archive, "adj_matrix")
            attributes = _csr(archive, "attr_matrix")
            labels = archive["labels"]
    except (KeyError, ValueError, OSError) as error:
        raise ValueError(f"dataset {name!r}: {path} is not a readable graph .npz ({error})") from error
    coo = adjacency.tocoo()
    edge_index = torch.from_numpy(np.stack([coo.row, coo.col]).astype(np.int64))
    y = torch.from_numpy(labels.astype(np.int64))
    return Data(
        x=torch.from_numpy(attributes.toarray()).float(),
        edge_index=edge_index,
        y=y,
        num_classes=int(y.max()) + 1,
    )


def _csr(archive: np.lib.npyio.NpzFile, prefix: str):
    import scipy.sparse as sp

    parts = [archive[f"{prefix}.{part}"] for part in ("data", "indices", "indptr")]
    return sp.csr_matrix(tuple(parts), shape=tuple(archive[f"{prefix}.shape"]))


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
