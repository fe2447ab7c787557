"""The markers tell the truth: a fast test that starts a process fails, and so does a slow test that starts Ray
without the `ray` marker (tests/conftest.py)."""

import shutil
import subprocess
import sys

import pytest


def test_a_fast_test_may_not_start_a_process(monkeypatch, subprocess_guard):
    subprocess_guard("tests/x.py::test_y", monkeypatch)
    with pytest.raises(pytest.fail.Exception, match=r"test_y starts a process \(.*python.*\) but is not marked slow"):
        subprocess.run([sys.executable, "-c", "pass"])
    assert subprocess.run(["git", "--version"], capture_output=True).returncode == 0  # provenance's git is fast


@pytest.mark.slow
def test_a_slow_test_may():
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0


@pytest.mark.slow
def test_a_slow_test_that_starts_ray_unmarked_fails(ray_watch, tmp_path):
    """A process named as a Ray node's (here `sleep` under the name `raylet`) among the test's descendants."""
    raylet = tmp_path / "raylet"
    shutil.copy(shutil.which("sleep"), raylet)
    with pytest.raises(pytest.fail.Exception, match=r"test_y starts Ray \(raylet\) but is not marked ray"):
        with ray_watch("tests/x.py::test_y", every=0.05):
            subprocess.run([str(raylet), "2"], check=True)  # long enough for a watcher on a loaded machine
    with ray_watch("tests/x.py::test_y", every=0.05):  # any other process is fine
        subprocess.run([shutil.which("sleep"), "0.3"], check=True)
