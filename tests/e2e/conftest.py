"""End-to-end runs: the real ``stamen run`` command, as a user types it."""

import os
import subprocess
import sys
from collections.abc import Callable

import pytest


@pytest.fixture
def stamen_run() -> Callable[[str], subprocess.CompletedProcess]:
    """Run ``stamen run -c RUN_CONFIG`` on 3 simulated SuperNodes; return the finished process."""

    def run(run_config: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "simulations.cli", "run", "-c", run_config]
            + ["--federation-config", "num-supernodes=3 client-resources-num-cpus=1"],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )

    return run
