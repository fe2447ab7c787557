"""The same numbers on both engines with no environment variable set (``OMP_NUM_THREADS`` unset).

On a machine with more than one core, torch's CPU kernels split their sums over as many
threads as it has cores, and the order of a sum depends on their number: the in-process
engine (one process, every thread) drifted from Flower's one-thread actors in the last
bits, and then in the figures (4 of 30 rounds). Clients now pin their kernels themselves
(:func:`stamen.client.device.pin_threads`), so the rows agree exactly, with nothing set.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_TIMING = ("seconds", "devices", "wall", "process")


def _rows(run_dir: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [_without_timings(row) for row in rows]


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if not any(part in k for part in _TIMING)}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: torch uses one thread anyway, nothing to pin")
def test_both_engines_give_the_same_rows_with_threads_unpinned(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    config = f"output-dir='{tmp_path}' num-server-rounds=15 csbm-nodes=3000 local-epochs=2 seed=3"
    for engine in ("flower", "inprocess"):
        result = subprocess.run(
            [sys.executable, "-m", "stamen.cli.main", "run", "--quiet", "--engine", engine]
            + ["-c", f"{config} run-name='{engine}'", "--federation-config", "num-supernodes=4"],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    flower, inprocess = _rows(tmp_path / "flower"), _rows(tmp_path / "inprocess")
    assert len(flower) == len(inprocess) == 16
    differing = [row["round"] for row, twin in zip(flower, inprocess) if row != twin]
    assert differing == [], f"rounds whose rows differ between the engines: {differing}"
