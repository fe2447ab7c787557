"""Round checkpoints: one file replaced as a unit, refused whole when damaged, never half written."""

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord

from stamen.server.checkpoint import CHECKPOINT_FILE, Checkpoint, checkpoint_dir, load_checkpoint, save_checkpoint

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("encoder.weight", "encoder.bias", "head.weight")


def _checkpoint(round_: int) -> Checkpoint:
    """Round ``round_``'s state: every weight equals the round, so a mix of rounds shows."""
    shapes = ((4, 3), (4,), (2, 4))
    arrays = ArrayRecord({n: Array(np.full(s, float(round_), dtype=np.float32)) for n, s in zip(NAMES, shapes)})
    pending = {"round": round_, "clients": 3, "failed_clients": []}
    return Checkpoint(round_, arrays, pending, node_partitions={100: 0, 101: 1}, sampler_state=_sampler(round_))


def _sampler(seed: int) -> list:
    """A real ``random.getstate()`` in its JSON form (tuples as lists)."""
    version, internal, gauss = random.Random(seed).getstate()
    return [version, list(internal), gauss]


def _assert_whole(checkpoint: Checkpoint, round_: int) -> None:
    assert checkpoint.round == round_ and checkpoint.pending["round"] == round_
    assert list(checkpoint.arrays.keys()) == list(NAMES)
    assert all(np.all(array.numpy() == round_) for array in checkpoint.arrays.values())


def _temporaries(run_dir: Path) -> list[str]:
    return sorted(path.name for path in run_dir.iterdir() if path.name.startswith(f".{CHECKPOINT_FILE}"))


def test_a_checkpoint_is_one_file_that_loads_back_whole(tmp_path):
    save_checkpoint(tmp_path, _checkpoint(1))
    save_checkpoint(tmp_path, _checkpoint(2))
    assert sorted(path.name for path in tmp_path.iterdir()) == [CHECKPOINT_FILE]
    loaded = load_checkpoint(tmp_path / CHECKPOINT_FILE)  # a file in the run directory names it too
    _assert_whole(loaded, 2)
    assert loaded.node_partitions == {100: 0, 101: 1} and loaded.sampler_state == _sampler(2)
    assert checkpoint_dir(tmp_path) == tmp_path.resolve()


# The child saves round 3 over round 2's checkpoint and is SIGKILLed at one step of the write.
_CHILD = """
import os, signal, sys
import numpy as np
from pathlib import Path
from flwr.app import Array, ArrayRecord
from stamen.server.checkpoint import Checkpoint, save_checkpoint

point, run_dir = sys.argv[1], Path(sys.argv[2])
names, shapes = NAMES, ((4, 3), (4,), (2, 4))
arrays = ArrayRecord({n: Array(np.full(s, 3.0, dtype=np.float32)) for n, s in zip(names, shapes)})
checkpoint = Checkpoint(3, arrays, {"round": 3}, node_partitions={100: 0}, sampler_state=[])
fsyncs = []
real_fsync = os.fsync

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

real_fdopen = os.fdopen

class HalfWritten:  # the temporary file gets the first half of the checkpoint's bytes, then death
    def __init__(self, stream):
        self.stream = stream
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.stream.close()
    def write(self, data):
        self.stream.write(data[: len(data) // 2])
        self.stream.flush()
        die()

def fsync(descriptor):  # the file's fsync comes first, the directory's second
    fsyncs.append(descriptor)
    if (point, len(fsyncs)) in {("file-fsync", 1), ("directory-fsync", 2)}:
        die()
    real_fsync(descriptor)

os.fsync = fsync
if point == "write":
    os.fdopen = lambda *args, **kwargs: HalfWritten(real_fdopen(*args, **kwargs))
if point == "replace":
    os.replace = die
save_checkpoint(run_dir, checkpoint)
""".replace("NAMES", repr(NAMES))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "survivor"), [("write", 2), ("file-fsync", 2), ("replace", 2), ("directory-fsync", 3)]
)
def test_a_writer_killed_at_any_step_leaves_a_whole_checkpoint(tmp_path, point, survivor):
    save_checkpoint(tmp_path, _checkpoint(2))
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, point, str(tmp_path)], cwd=ROOT, env=environment, capture_output=True, text=True
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    _assert_whole(load_checkpoint(tmp_path), survivor)  # round 2 whole, or round 3 whole once renamed
    left = _temporaries(tmp_path)
    assert len(left) == (0 if point == "directory-fsync" else 1), left
    (tmp_path / ".checkpoint.npz.notes").write_text("not ours")  # not a name this module writes
    save_checkpoint(tmp_path, _checkpoint(4))  # the next save removes what the killed writer left
    assert _temporaries(tmp_path) == [".checkpoint.npz.notes"]
    _assert_whole(load_checkpoint(tmp_path), 4)


def test_a_failed_write_removes_its_temporary_file_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    save_checkpoint(tmp_path, _checkpoint(2))

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint(tmp_path, _checkpoint(3))
    assert _temporaries(tmp_path) == []
    _assert_whole(load_checkpoint(tmp_path), 2)


def _write_raw(run_dir: Path, meta: dict, stored_round, weights: int = 3, **extra) -> None:
    entries = {f"weight/{i}": np.zeros(2, dtype=np.float32) for i in range(weights)}
    entries["round"] = np.array(stored_round)
    entries["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(run_dir / CHECKPOINT_FILE, "wb") as stream:
        np.savez(stream, **{**entries, **extra})


META = {"round": 3, "weight_names": list(NAMES), "pending": {"round": 3}, "node_partitions": {}, "sampler_state": []}


def _refused(run_dir: Path, match: str) -> None:
    for read in (load_checkpoint, checkpoint_dir):
        with pytest.raises(ValueError, match=match) as refused:
            read(run_dir)
        message = str(refused.value)
        assert "\n" not in message and message.startswith("resume-from=") and "start a new run" in message


def test_a_checkpoint_whose_round_or_weights_disagree_is_refused(tmp_path):
    _write_raw(tmp_path, META, 2)
    _refused(tmp_path, "the stored round 2 differs from the metadata's 3")
    _write_raw(tmp_path, META, 3, weights=2)
    _refused(tmp_path, "2 weight arrays for 3 weight names")
    _write_raw(tmp_path, {**META, "round": "3"}, 3)
    _refused(tmp_path, "round '3' is not a finished round")
    _write_raw(tmp_path, META, 3)
    assert load_checkpoint(tmp_path).round == 3  # the same file, consistent, loads


def test_a_truncated_or_damaged_checkpoint_is_refused(tmp_path):
    save_checkpoint(tmp_path, _checkpoint(5))
    file = tmp_path / CHECKPOINT_FILE
    whole = file.read_bytes()
    file.write_bytes(whole[: len(whole) // 2])
    _refused(tmp_path, "is not a whole Stamen checkpoint")
    weights = whole.index(np.full((4, 3), 5.0, dtype=np.float32).tobytes())  # flip one byte of a weight
    file.write_bytes(whole[:weights] + bytes([whole[weights] ^ 0xFF]) + whole[weights + 1 :])
    _refused(tmp_path, "CRC")


def test_nothing_in_a_checkpoint_is_unpickled_and_the_old_format_is_named(tmp_path):
    with open(tmp_path / CHECKPOINT_FILE, "wb") as stream:  # metadata as a pickled object array
        np.savez(stream, round=np.array(3), meta=np.array([META], dtype=object))
    _refused(tmp_path, "pickle")
    with open(tmp_path / CHECKPOINT_FILE, "wb") as stream:  # the earlier two-file format's weights file
        np.savez(stream, **{"weight/0": np.zeros(2)})
    _refused(tmp_path, "older Stamen")


def test_a_directory_without_a_checkpoint_is_named_in_one_line(tmp_path):
    for read in (load_checkpoint, checkpoint_dir):
        with pytest.raises(FileNotFoundError, match="no checkpoint.npz there; give the run directory") as missing:
            read(tmp_path / "nowhere")
        assert "\n" not in str(missing.value)
