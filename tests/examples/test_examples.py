"""examples/: each script runs at its small settings (``STAMEN_EXAMPLES_SMALL=1``) into a temporary folder,
and what it shows is what its outputs on disk hold. a-d run in this process (runpy); the deployment starts
processes (a SuperLink, SuperNodes) and is marked slow."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import types
from pathlib import Path

import pytest

import stamen

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
README = EXAMPLES.parent / "README.md"


def _run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("STAMEN_EXAMPLES_SMALL", "1")
    monkeypatch.setenv("STAMEN_EXAMPLES_OUT", str(tmp_path))
    monkeypatch.chdir(tmp_path)  # nothing may be written beside the caller
    return runpy.run_path(str(EXAMPLES / name), run_name="__main__")


def test_every_example_is_a_percent_script_listed_in_the_readme_and_tested_here():
    scripts = sorted(path.name for path in EXAMPLES.glob("*.py"))
    assert len(scripts) >= 5
    tested = Path(__file__).read_text()
    readme = README.read_text()
    for name in scripts:
        text = (EXAMPLES / name).read_text()
        assert text.startswith("# %% [markdown]\n# # "), f"{name}: open with a markdown cell and a title"
        assert "\n# %%\n" in text and "SMALL" in text and "STAMEN_EXAMPLES_OUT" in text, name
        assert f'"{name}"' in tested, f"{name} has no test here"
        assert f"examples/{name}" in readme, f"{name} is not listed in README.md"


def test_a_quickstart_and_three_algorithms(tmp_path, monkeypatch, capsys):
    scope = _run("01_quickstart_compare.py", tmp_path, monkeypatch)
    table = scope["last"]
    assert list(table.index) == ["fedavg", "fedprox", "ditto"]
    for name in table.index:
        run = stamen.load(tmp_path / "quickstart" / name)
        assert run.config["algorithm"] == name and run.status == stamen.RunStatus.FINISHED
        assert table.loc[name, "global_test_acc"] == run.rows[-1]["global_test_acc"]
        assert table.loc[name, "best_round"] == run.summary["best_round"]
    assert "ditto" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quickstart"]


def test_b_certificates(tmp_path, monkeypatch):
    scope = _run("02_certify.py", tmp_path, monkeypatch)
    saved = json.loads((tmp_path / "certify" / "certificate.json").read_text())
    table = scope["table"]
    assert list(table.index) == ["gcn", "sgc", "mlp"]
    for arch in table.index:
        aggregates = saved["architectures"][arch]["aggregates"]
        for budget in (1, 2, 3):
            assert table.loc[arch, budget] == aggregates[str(budget)]["certified_accuracy"]
    assert not (tmp_path / "certify" / "never").exists()  # the refused call wrote nothing


def test_c_unlearning(tmp_path, monkeypatch):
    scope = _run("03_unlearn.py", tmp_path, monkeypatch)
    folder = tmp_path / "unlearn" / "trained" / "unlearn" / "class-1"
    result = json.loads((folder / "result.json").read_text())
    assert scope["forgot"].dir == folder and result["request"] == "class:1"
    assert list(scope["table"].index) == result["methods"] == ["original", "retrain", "wash"]
    assert scope["table"].loc["wash", "acc_forget"] == result["mean"]["wash"]["acc_forget"]


def test_d_privacy_audit(tmp_path, monkeypatch):
    scope = _run("04_privacy_audit.py", tmp_path, monkeypatch)
    results = json.loads((tmp_path / "audit" / "audit.json").read_text())["results"]
    assert [r["privacy"] for r in results] == list(scope["table"]["privacy"]) == ["none", "dp-sgd"]
    private = results[1]
    assert private["target_epsilon"] == 4 and private["lower_bound"] <= private["accountant_epsilon"]


@pytest.mark.slow
def test_e_deployment_on_loopback(tmp_path):
    env = {"STAMEN_EXAMPLES_SMALL": "1", "STAMEN_EXAMPLES_OUT": str(tmp_path), "PYTHONPATH": str(EXAMPLES.parent)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "05_deploy_loopback.py")],
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = stamen.load(tmp_path / "deploy" / "runs" / "deployed")
    assert run.status == stamen.RunStatus.FINISHED and run.rows[-1]["round"] == 2
    assert "2 rounds" in done.stdout


@pytest.mark.parametrize(
    "name,run_name,setting",
    [("06_own_algorithm.py", "fednag", ("algorithm", "fednag")), ("07_own_model.py", "resgcn", ("model", "resgcn"))],
)
def test_e_own_plugins(name, run_name, setting, tmp_path, monkeypatch, registries):
    scope = _run(name, tmp_path, monkeypatch)
    run = stamen.load(tmp_path / "own" / run_name)
    assert run.config[setting[0]] == setting[1] and run.status == stamen.RunStatus.FINISHED
    assert scope["run"].rows[-1]["global_test_acc"] == run.rows[-1]["global_test_acc"]
    assert len(run.rows) == 4


def test_e_own_task(tmp_path, monkeypatch, registries):
    """The label-smoothing task trains node classification's model from the same seeded start (round 0's
    figures, measured before any training, are node classification's), on its own loss after."""
    scope = _run("08_own_task.py", tmp_path, monkeypatch)
    run = stamen.load(tmp_path / "own" / "smooth")
    assert run.config["task"] == "smooth-node-classification" and run.status == stamen.RunStatus.FINISHED
    assert run.summary["task"] == "smooth-node-classification" and len(run.rows) == 4
    assert scope["run"].rows[-1]["global_test_acc"] == run.rows[-1]["global_test_acc"]
    plain = stamen.run(
        {"csbm-nodes": 300, "num-server-rounds": 3}, clients=3, out=tmp_path / "plain", run_name="p", overwrite=True
    )
    assert run.rows[0]["global_test_acc"] == plain.rows[0]["global_test_acc"]
    assert [row["train_loss"] for row in run.rows[1:]] != [row["train_loss"] for row in plain.rows[1:]]


def test_e_own_partitioner(tmp_path, monkeypatch, registries):
    """The contiguous-range partitioner's clients hold node ids 0-99, 100-199 and 200-299 of the 300-node graph."""
    from stamen.contract.run_config import RunConfig
    from stamen.graphs import build_federation

    scope = _run("09_own_partitioner.py", tmp_path, monkeypatch)
    run = stamen.load(tmp_path / "own" / "ranges")
    assert run.config["partitioner"] == "ranges" and run.status == stamen.RunStatus.FINISHED and len(run.rows) == 4
    assert scope["run"].rows[-1]["global_test_acc"] == run.rows[-1]["global_test_acc"]
    federation = build_federation(RunConfig.from_flower(run.config).federation(3))  # the run's clients
    assert [(int(part.min()), int(part.max()), part.size) for part in federation.parts] == [
        (0, 99, 100),
        (100, 199, 100),
        (200, 299, 100),
    ]
    train = sum(int(client.train_mask.sum()) for client in federation.clients)
    assert sum(c["train_nodes"] for c in run.rows[-1]["per_client"].values()) == train


def test_f_own_dataset(tmp_path, monkeypatch, registries):
    """The example's 120-node graph of 3 classes, written as two text files, is what the run's clients hold."""
    from stamen.contract.run_config import RunConfig
    from stamen.graphs import build_federation

    scope = _run("10_own_dataset.py", tmp_path, monkeypatch)
    run = stamen.load(tmp_path / "own-dataset" / "edges")
    assert run.config["dataset"] == "edges:communities" and run.status == stamen.RunStatus.FINISHED
    assert len(run.rows) == 4 and scope["run"].rows[-1]["global_test_acc"] == run.rows[-1]["global_test_acc"]
    assert sorted(p.name for p in (tmp_path / "own-dataset" / "data" / "edges").iterdir()) == [
        "communities.edges",
        "communities.nodes",
    ]
    script = types.ModuleType("__main__")  # the spec names the script's functions as __main__'s, as run
    script.__dict__.update(scope)
    monkeypatch.setitem(sys.modules, "__main__", script)
    federation = build_federation(RunConfig.from_flower(run.config).federation(3))  # the run's clients
    assert federation.graph.num_nodes == 120 and int(federation.graph.num_classes) == 3
    assert sum(part.size for part in federation.parts) == 120


@pytest.mark.parametrize(
    "section,example",
    [
        ("Your own task", "08_own_task.py"),
        ("Your own partitioner", "09_own_partitioner.py"),
        ("Your own dataset", "10_own_dataset.py"),
    ],
)
def test_the_guide_shows_the_code_the_examples_run(section, example):
    """docs/extending.md's code of a plug-in kind is its example's, verbatim: the code the tests above run."""
    guide = (EXAMPLES.parent / "docs" / "extending.md").read_text()
    text = guide.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = text.split("```python\n")[1:]
    assert blocks, f"no code in section {section!r}"
    source = (EXAMPLES / example).read_text()
    for block in blocks:
        assert block.split("```", 1)[0] in source
