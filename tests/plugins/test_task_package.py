"""The example task, partitioner and dataset form (examples 08, 09 and 10) installed as a package (their entry
points in a pip-made dist-info): `stamen config` lists them, the Flower engine's processes load them, and a run
gives the same rows in process and on Flower."""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PYPROJECT = """[project]
name = "stamen-smooth"
version = "0.1"
[project.entry-points."stamen.tasks"]
smooth-node-classification = "stamen_smooth:TASK"
[project.entry-points."stamen.partitioners"]
ranges = "stamen_ranges:PARTITIONER"
[project.entry-points."stamen.datasets"]
edges = "stamen_edges:DATASET"
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"
[tool.hatch.build.targets.wheel]
include = ["stamen_smooth.py", "stamen_ranges.py", "stamen_edges.py"]
"""
RUN = (
    "task='smooth-node-classification' partitioner='ranges' dataset='edges:communities' num-server-rounds=3 "
    "min-clients=2"
)
FIGURES = ("global_test_acc", "global_val_acc", "train_loss", "test_acc")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """The environment of a process that has the plug-in package installed (pip, into a folder on its path)."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "source"
    source.mkdir()
    shutil.copy(EXAMPLES / "08_own_task.py", source / "stamen_smooth.py")
    shutil.copy(EXAMPLES / "09_own_partitioner.py", source / "stamen_ranges.py")
    shutil.copy(EXAMPLES / "10_own_dataset.py", source / "stamen_edges.py")
    (source / "pyproject.toml").write_text(PYPROJECT)
    target = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*pip, "--target", str(target), str(source)], check=True, capture_output=True, timeout=300)
    assert (target / "stamen_smooth-0.1.dist-info" / "entry_points.txt").is_file()
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")]))}


def _stamen(env: dict[str, str], cwd: Path, *arguments: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "stamen.cli.main", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=500, env=env, cwd=cwd)


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.ray
def test_an_installed_task_partitioner_and_dataset_are_listed_and_run_alike_in_process_and_on_flower(
    installed, tmp_path
):
    shown = _stamen(installed, tmp_path, "config", "task")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "smooth-node-classification" in shown.stdout and "label-smoothed" in shown.stdout
    assert "ranges" in _stamen(installed, tmp_path, "config", "partitioner").stdout
    assert "edges:STEM" in _stamen(installed, tmp_path, "config", "dataset").stdout
    runpy.run_path(str(EXAMPLES / "10_own_dataset.py"))["write_graph"](tmp_path / "data", "communities", 100, 3)
    refused = _stamen(installed, tmp_path, "run", "-c", RUN + " privacy='dp-sgd' model='sgc'")
    assert refused.returncode == 2
    assert (
        "task='smooth-node-classification' does not admit privacy='dp-sgd'" in refused.stderr.strip().splitlines()[-1]
    )
    rows = {}
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
            f"{RUN} data-root='{tmp_path / 'data'}' output-dir='{out}' run-name='r'",
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads((out / "r" / "summary.json").read_text())["task"] == "smooth-node-classification"
        rows[engine] = _rows(out / "r")
    figures = {engine: [[row.get(key) for key in FIGURES] for row in found] for engine, found in rows.items()}
    assert figures["flower"] == figures["inprocess"] and len(figures["flower"]) == 4
    # contiguous ranges of the 300 nodes the dataset plug-in read: 100 per client, of which train-frac (0.6) train
    clients = rows["flower"][-1]["per_client"]
    assert sorted(clients) == ["0", "1", "2"] and all(c["train_nodes"] == 60 for c in clients.values())
