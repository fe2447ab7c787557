"""Round checkpoints: the global model, the strategy's state and the round, saved every round.

A checkpoint is ONE file in the run directory, ``checkpoint.npz``, so that it is
replaced as a unit: a crash at any point leaves either the previous checkpoint or the
new one, whole, never the weights of one round with the metadata of another. It holds

- ``weight/<i>``: the global weights, one array per state-dict entry, in order;
- ``round``: the finished round, as an integer array;
- ``meta``: UTF-8 JSON as a uint8 array: the same round, the weights' names, the row
  of that round still waiting for its global accuracies (they arrive with the next
  round), which node holds which partition, and the strategy's state. Flower's FedAvg
  and FedProx aggregate each round from that round's replies alone; what carries over
  between their rounds is the client sampler, which draws from Python's ``random``:
  its state is saved, so a resumed run samples the clients the uninterrupted run would
  have.

Writing (:func:`stamen.common.file_writes.atomic_write`): a temporary ``.checkpoint.npz.<random>.tmp``
in the same directory, flushed and fsynced, renamed over ``checkpoint.npz``
(``os.replace``, atomic on one file system), then the directory is fsynced so the
rename itself survives a power loss. The temporary file is removed on any failure; one left by a writer that was
killed is removed by the next save and never read.

Loading cross-checks the file: the stored round equals the metadata's, there are as
many weight arrays as names, and the zip's checksums hold (a truncated or damaged file
fails them). A file that fails is refused with one line, never half used. Only NumPy
and JSON: the ServerApp starts without PyTorch, and nothing is unpickled
(``allow_pickle=False``).
"""

from __future__ import annotations

import io
import json
import random
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord

from stamen.common.file_writes import atomic_write
from stamen.contract import strict_json
from stamen.contract.arrays import array_values

CHECKPOINT_FILE = "checkpoint.npz"
_WEIGHT = "weight/"
_ROUND = "round"
_META = "meta"
# Temporary files of this module's writers (and of the earlier two-file writer): removed before a save.
_STALE = re.compile(r"\.checkpoint\.npz\.[0-9a-f]{12}\.tmp|\.checkpoint\.(npz|json)\.\d+")


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

    def random_state(self) -> tuple | None:
        """The sampler's ``random.getstate()`` back from its JSON form (tuples became lists); None if not saved."""
        if not self.sampler_state:
            return None
        version, internal, gauss = self.sampler_state
        return version, tuple(internal), gauss

    def check_weights(self, model: ArrayRecord) -> None:
        """ValueError in one line unless every saved weight is one of ``model``'s, with its shape and dtype.

        ``model`` is the run's initial model (what every client builds); the server's weights may
        be a part of it (the shared part of a personalised model). A checkpoint of another model
        (another ``hidden``, a hand-copied file) is refused before a resume changes anything.
        """
        wanted = {name: (tuple(a.shape), a.dtype) for name, a in model.items()}
        for name, array in self.arrays.items():
            saved = (tuple(array.shape), array.dtype)
            if wanted.get(name) != saved:
                has = f"has {wanted[name]}" if name in wanted else "has no such array"
                raise ValueError(
                    f"the checkpoint's weights do not fit the run's model ({name!r}: saved {saved}, the model {has}); "
                    "resume with the run's own config and checkpoint, or start a new run"
                )


def save_checkpoint(run_dir: Path, checkpoint: Checkpoint) -> None:
    """Replace ``run_dir/checkpoint.npz`` with ``checkpoint``, atomically and durably."""
    write_checkpoint(run_dir, checkpoint_bytes(checkpoint))


def write_checkpoint(run_dir: Path, data: bytes) -> None:
    """Replace ``run_dir/checkpoint.npz`` with ``data`` (:func:`checkpoint_bytes`), atomically and durably.

    Until the rename the previous checkpoint stays whole; the temporary file is removed
    whatever fails, and stale temporary files of a killed writer are removed first.
    """
    run_dir = Path(run_dir)
    _remove_stale(run_dir)
    atomic_write(run_dir / CHECKPOINT_FILE, data)


def checkpoint_bytes(checkpoint: Checkpoint) -> bytes:
    """``checkpoint`` as the bytes of ``checkpoint.npz`` (see the module docstring)."""
    meta = {
        "round": checkpoint.round,
        "weight_names": list(checkpoint.arrays.keys()),
        "pending": checkpoint.pending,
        "node_partitions": {str(k): v for k, v in checkpoint.node_partitions.items()},
        "sampler_state": checkpoint.sampler_state,
    }
    entries = {
        f"{_WEIGHT}{i}": array_values(array, writable=False) for i, array in enumerate(checkpoint.arrays.values())
    }
    entries[_ROUND] = np.array(checkpoint.round, dtype=np.int64)
    entries[_META] = np.frombuffer(strict_json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **entries)
    return buffer.getvalue()


def _remove_stale(run_dir: Path) -> None:
    """Remove temporary checkpoint files left by a writer that was killed (plain files of our names only)."""
    for path in run_dir.iterdir():
        if _STALE.fullmatch(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)


def checkpoint_dir(path: str | Path) -> Path:
    """The run directory of ``resume-from`` (a run directory or a file in it), with a valid checkpoint.

    Raises FileNotFoundError (no checkpoint there) or ValueError (a damaged or
    inconsistent one), each with one line naming the path and what to do.
    """
    folder = resume_folder(path)
    _read(folder, Path(path).expanduser().resolve())
    return folder


def resume_folder(path: str | Path) -> Path:
    """The run directory ``resume-from`` names (a run directory or a file in it), unread and unchecked."""
    path = Path(path).expanduser().resolve()
    return path.parent if path.is_file() else path


def load_checkpoint(path: str | Path) -> Checkpoint:
    """The checkpoint of the run directory ``path`` (or of the run directory of the file ``path``).

    Raises as :func:`checkpoint_dir` does; a checkpoint that loads is whole and consistent.
    """
    path = Path(path).expanduser().resolve()
    return _read(path.parent if path.is_file() else path, path)


def _read(folder: Path, given: Path) -> Checkpoint:
    file = folder / CHECKPOINT_FILE
    if not file.is_file():
        raise FileNotFoundError(
            f"resume-from={str(given)!r}: no {CHECKPOINT_FILE} there; "
            "give the run directory of a run that finished at least one round"
        )
    try:
        return _parse(file)
    except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(
            f"resume-from={str(given)!r}: {file} is not a whole Stamen checkpoint ({reason}); "
            "start a new run, or resume from another run directory"
        ) from error


def _parse(file: Path) -> Checkpoint:
    if not zipfile.is_zipfile(file):  # np.load would take any other file for a pickle, and refuse it as one
        raise ValueError("not a whole .npz archive: truncated, or not a checkpoint")
    with np.load(file, allow_pickle=False) as stored:
        names = set(stored.files)
        if _META not in names or _ROUND not in names:
            raise ValueError(f"no {_META!r} or {_ROUND!r} entry (written by an older Stamen?)")
        meta = json.loads(stored[_META].tobytes().decode("utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("its metadata is not a JSON object")
        stored_round, meta_round = stored[_ROUND], meta["round"]
        if not isinstance(meta_round, int) or isinstance(meta_round, bool) or meta_round < 1:
            raise ValueError(f"its metadata's round {meta_round!r} is not a finished round")
        if stored_round.shape != () or stored_round.dtype.kind not in "iu" or int(stored_round) != meta_round:
            raise ValueError(f"the stored round {stored_round.tolist()} differs from the metadata's {meta_round}")
        weight_names = meta["weight_names"]
        count = sum(name.startswith(_WEIGHT) for name in names)
        if not isinstance(weight_names, list) or len(weight_names) != count:
            raise ValueError(f"{count} weight arrays for {len(weight_names)} weight names")
        weights = [stored[f"{_WEIGHT}{i}"] for i in range(count)]  # each read checks the zip's CRC
    pending, node_partitions, sampler_state = meta["pending"], meta["node_partitions"], meta["sampler_state"]
    if not isinstance(pending, dict) or not isinstance(node_partitions, dict) or not isinstance(sampler_state, list):
        raise ValueError("its metadata's pending row, node partitions or sampler state has the wrong type")
    if sampler_state:  # what random.setstate will be given: checked now, before a resume writes anything
        try:
            version, internal, gauss = sampler_state
            random.Random().setstate((version, tuple(internal), gauss))
        except (TypeError, ValueError, OverflowError) as error:
            raise ValueError(f"its sampler state is malformed ({error})") from None
    return Checkpoint(
        round=meta_round,
        arrays=ArrayRecord({str(name): Array(w) for name, w in zip(weight_names, weights, strict=True)}),
        pending=pending,
        node_partitions={int(k): int(v) for k, v in node_partitions.items()},
        sampler_state=sampler_state,
    )
