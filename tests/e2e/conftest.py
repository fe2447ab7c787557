"""End-to-end runs: the real ``stamen run`` command, as a user types it."""

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def stamen_run() -> Callable[[str], subprocess.CompletedProcess]:
    """Run ``stamen run -c RUN_CONFIG`` on 3 simulated SuperNodes; return the finished process."""

    def run(run_config: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "stamen.cli.main", "run", "-c", run_config]
            + ["--federation-config", "num-supernodes=3 client-resources-num-cpus=1"],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )

    return run


@pytest.fixture
def same_in_process(same_figures: Callable[[object, object, str], None]) -> Callable[[Path, str], Path]:
    """Run a finished Flower run's config again with ``--engine inprocess`` and assert the same figures.

    Every row of ``metrics.jsonl`` and the optional results (certificates, unlearning)
    must agree to 1e-6: the engines share the ServerApp and ClientApp code.
    """
    import json

    from stamen.cli.main import main as stamen

    def twin(run_dir: Path, run_config: str) -> Path:
        twin_dir = run_dir.parent / f"{run_dir.name}-inprocess"
        code = stamen(
            ["run", "--engine", "inprocess", "--quiet", "-c", run_config, "-c", f"run-name='{twin_dir.name}'"]
            + ["--federation-config", "num-supernodes=3"]
        )
        assert code == 0
        rows = [
            [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()] for d in (run_dir, twin_dir)
        ]
        same_figures(rows[0], rows[1], "metrics")
        for name in ("certificates.json", "unlearn.json"):
            if (run_dir / name).is_file():
                same_figures(json.loads((run_dir / name).read_text()), json.loads((twin_dir / name).read_text()), name)
        return twin_dir

    return twin
