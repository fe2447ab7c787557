"""Round checkpoints: the global model, the strategy's state and the round, saved every round.

A checkpoint lives in the run directory as two files written atomically (a crash
leaves the previous checkpoint whole):

- ``checkpoint.npz``: the global weights, one array per state-dict entry;
- ``checkpoint.json``: the finished round, the weights' names, the row of that round
  still waiting for its global accuracies (they arrive with the next round), which
  node holds which partition, and the strategy's state. Flower's FedAvg and FedProx
  aggregate each round from that round's replies alone; what carries over between
  their rounds is the client sampler, which draws from Python's ``random``: its state
  is saved, so a resumed run samples the clients the uninterrupted run would have.

Only NumPy and JSON: the ServerApp starts without PyTorch, and nothing is unpickled.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord

ARRAYS_FILE = "checkpoint.npz"
META_FILE = "checkpoint.json"
_WEIGHT = "weight/"


@dataclass
class Checkpoint:
    """The server's state after round ``round``.

    Attributes:
        round: the last finished round.
        arrays: the global weights after that round's aggregation.
        pending: that round's metrics row (its global accuracies are measured next round).
        node_partitions: Flower node id -> partition id, as the clients reported them.
        sampler_state: ``random.getstate()`` of the client sampler (JSON form; empty: not saved).
    """

    round: int
    arrays: ArrayRecord
    pending: dict[str, Any]
    node_partitions: dict[int, int] = field(default_factory=dict)
    sampler_state: list = field(default_factory=list)


def save_checkpoint(run_dir: Path, checkpoint: Checkpoint) -> None:
    names = list(checkpoint.arrays.keys())
    stored = {f"{_WEIGHT}{i}": array.numpy() for i, array in enumerate(checkpoint.arrays.values())}
    meta = {
        "round": checkpoint.round,
        "weight_names": names,
        "pending": checkpoint.pending,
        "node_partitions": {str(k): v for k, v in checkpoint.node_partitions.items()},
        "sampler_state": checkpoint.sampler_state,
    }
    staging = run_dir / f".{ARRAYS_FILE}.{os.getpid()}"
    with open(staging, "wb") as stream:  # a file object: np.savez would append ".npz" to a path
        np.savez(stream, **stored)
    os.replace(staging, run_dir / ARRAYS_FILE)
    staging = run_dir / f".{META_FILE}.{os.getpid()}"
    staging.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(staging, run_dir / META_FILE)


def checkpoint_dir(path: str | Path) -> Path:
    """The run directory of ``resume-from`` (a run directory or a file in it)."""
    path = Path(path).expanduser().resolve()
    folder = path.parent if path.is_file() else path
    if not (folder / META_FILE).is_file() or not (folder / ARRAYS_FILE).is_file():
        raise FileNotFoundError(
            f"resume-from={str(path)!r}: no {META_FILE} and {ARRAYS_FILE} there; "
            "give the run directory of a run that finished at least one round"
        )
    return folder


def load_checkpoint(path: str | Path) -> Checkpoint:
    folder = checkpoint_dir(path)
    meta = json.loads((folder / META_FILE).read_text())
    with np.load(folder / ARRAYS_FILE) as stored:
        weights = [stored[f"{_WEIGHT}{i}"] for i in range(len(meta["weight_names"]))]
    arrays = ArrayRecord({name: Array(w) for name, w in zip(meta["weight_names"], weights, strict=True)})
    return Checkpoint(
        round=int(meta["round"]),
        arrays=arrays,
        pending=meta["pending"],
        node_partitions={int(k): int(v) for k, v in meta["node_partitions"].items()},
        sampler_state=meta["sampler_state"],
    )
