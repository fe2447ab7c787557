"""The `slow` marker tells the truth: a fast test that starts a process fails (tests/conftest.py)."""

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
