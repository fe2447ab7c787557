"""The example plug-ins (an algorithm, a model) installed as a package (its entry points in a pip-made
dist-info): every engine's processes load them, and a run gives the same rows in process, on Flower and in a
loopback deployment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PYPROJECT = """[project]
name = "stamen-fednag"
version = "0.1"
[project.entry-points."stamen.algorithms"]
fednag = "stamen_fednag:ALGORITHM"
[project.entry-points."stamen.models"]
resgcn = "stamen_resgcn:MODEL"
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
[tool.hatch.build.targets.wheel]
include = ["stamen_fednag.py", "stamen_resgcn.py"]
"""
RUN = "algorithm='fednag' model='resgcn' fednag-momentum=0.7 csbm-nodes=300 num-server-rounds=3 min-clients=2"
FIGURES = ("global_test_acc", "global_val_acc", "train_loss", "test_acc")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """The environment of a process that has the plug-in package installed (pip, into a folder on its path)."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "source"
    source.mkdir()
    shutil.copy(EXAMPLES / "06_own_algorithm.py", source / "stamen_fednag.py")
    shutil.copy(EXAMPLES / "07_own_model.py", source / "stamen_resgcn.py")
    (source / "pyproject.toml").write_text(PYPROJECT)
    target = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*pip, "--target", str(target), str(source)], check=True, capture_output=True, timeout=300)
    assert (target / "stamen_fednag-0.1.dist-info" / "entry_points.txt").is_file()
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")]))}


def _stamen(env: dict[str, str], cwd: Path, *arguments: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "stamen.cli.main", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=500, env=env, cwd=cwd)


def _figures(folder: Path) -> list[list]:
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [[row.get(key) for key in FIGURES] for row in rows]


@pytest.mark.slow
@pytest.mark.ray
def test_an_installed_plugin_is_listed_and_runs_alike_on_every_engine(installed, tmp_path):
    listed = _stamen(installed, tmp_path, "config")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "[fednag] fednag's options, a plug-in (entry point fednag (stamen-fednag))" in listed.stdout
    assert "fednag-momentum = 0.5" in listed.stdout
    shown = _stamen(installed, tmp_path, "config", "algorithm")
    assert "fednag" in shown.stdout and "FedAvg with server-side Nesterov momentum" in shown.stdout
    refused = _stamen(installed, tmp_path, "run", "-c", RUN + " fednag-momentum=1.5")
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].endswith(
        "fednag-momentum must lie in [0, 1), got 1.5"
    )
    figures = {}
    for engine in ("inprocess", "flower"):
        out = tmp_path / engine
        done = _stamen(
            installed,
            tmp_path,
            "run",
            "--engine",
            engine,
            "--clients",
            "3",
            "-c",
            f"{RUN} output-dir='{out}' run-name='r'",
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads((out / "r" / "config.json").read_text())["fednag-momentum"] == 0.7
        figures[engine] = _figures(out / "r")
    deploy = tmp_path / "deploy"
    done = _stamen(
        installed, tmp_path, "deploy", "local", "--workdir", str(tmp_path / "work"), "--clients", "3",
        "-c", f"{RUN} output-dir='{deploy}' run-name='r'",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    figures["deployment"] = _figures(deploy / "r")
    assert figures["flower"] == figures["inprocess"] == figures["deployment"]
    assert len(figures["inprocess"]) == 4 and figures["inprocess"][-1][0] is not None
