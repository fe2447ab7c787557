"""The size pre-flight: the memory a run needs, estimated from its config, against what this machine has.

:func:`check_size` runs before any data is read or generated and before the run directory is
made. Its estimate is a lower bound of what loading the data and training take: for ``csbm``
the features (``nodes x features x 4`` bytes), the edges (``2 x nodes x degree`` int64 pairs)
and one layer of activations per layer; for a dataset read from files, twice their size
(read, then held as tensors; which files: the dataset spec's ``files``,
:class:`stamen.graphs.names.DatasetSpec`); the model's weights, with their gradients and Adam's two
moments. A run whose estimate exceeds the machine's available memory is refused in one line
with both figures and the key to lower; ``size-check=false`` lets it go on anyway.
"""

from __future__ import annotations

import os
from pathlib import Path

from stamen.contract.run_config import RunConfig
from stamen.graphs.names import dataset_parts, dataset_spec, resolve

FLOAT = 4  # bytes of a float32
INDEX = 8  # bytes of an int64
UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def available_memory() -> int:
    """Bytes of memory this machine can give a run now: ``MemAvailable`` of ``/proc/meminfo``, else all of it."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def size_text(count: float) -> str:
    """``7.3 TiB``, ``23.0 GiB``, ``512 bytes``."""
    unit = 0
    while count >= 1024 and unit < len(UNITS) - 1:
        count /= 1024
        unit += 1
    return f"{count:.0f} bytes" if unit == 0 else f"{count:.1f} {UNITS[unit]}"


def estimate(config: RunConfig) -> list[tuple[float, str]]:
    """The parts of the memory ``config``'s run needs: ``(bytes, what to lower)`` each."""
    # on use: torch, torch_geometric, scipy, numpy stay out of this module's import
    from stamen.graphs.datasets import data_root

    parts: list[tuple[float, str]] = []
    features = 0
    if config.dataset == "csbm":
        nodes, features = config.csbm_nodes, config.csbm_features
        parts.append((nodes * features * FLOAT + nodes * INDEX, "fewer csbm-nodes or csbm-features"))
        edges = nodes * config.csbm_degree  # both directions of every edge: a mean degree of them per node
        parts.append((2 * edges * INDEX, "fewer csbm-nodes or a lower csbm-degree"))
        parts.append((nodes * config.hidden * config.num_layers * FLOAT, "fewer csbm-nodes or a smaller hidden"))
    else:
        root = data_root(config.data_root or None)
        size = sum(_files_size(part, root) for part in dataset_parts(config.dataset))
        parts.append((2 * size, "a smaller dataset"))
    hidden = config.hidden
    weights = hidden * hidden * max(config.num_layers - 1, 0) + hidden * max(features, 1)
    parts.append((4 * weights * FLOAT, "a smaller hidden"))  # weights, gradients, Adam's two moments
    return parts


def _files_size(dataset: str, root: Path | None) -> int:
    """Bytes of the files ``dataset`` reads (its spec's ``files``; 0 where there are none, or they are missing:
    the reader says so)."""
    spec = dataset_spec(dataset)
    if spec is None or not spec.files or root is None:
        return 0
    total = 0
    for path in resolve(spec.files)(dataset, root):
        try:
            total += path.stat().st_size if path.is_file() else 0
        except OSError:  # gone, or unreadable: the reader names it
            pass
    return total


def check_size(config: RunConfig) -> None:
    """ValueError in one line when the run needs more memory than this machine has (unless ``size-check=false``)."""
    if not config.size_check:
        return
    parts = estimate(config)
    needed = sum(size for size, _ in parts)
    have = available_memory()
    if needed > have:
        advice = max(parts)[1]
        raise ValueError(
            f"run needs about {size_text(needed)} of memory; this machine has {size_text(have)} available; "
            f"use {advice} (or size-check=false to go on anyway)"
        )
