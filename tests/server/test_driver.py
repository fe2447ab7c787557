"""One driver: every caller that trains a federation builds it with :func:`stamen.server.driver.build_driver`.

Each caller run on one config gives the rows (or the weights) of ``stamen run`` on that
config; the config uses client-level DP, so a caller that left out the privacy wrapper, the
seeding of the server's draws or the initial weights would differ. And no module but the
driver calls the round loop.
"""

import ast
import json
from pathlib import Path

import pytest
import torch

from stamen.benches.attacks import final_accuracy
from stamen.benches.privacy import federated_run
from stamen.cli.main import main as stamen
from stamen.contract.run_config import RunConfig
from stamen.experiments.unlearn_experiment import new_model, train_original
from stamen.server.rundir import row_line
from stamen.simulations.inprocess import run_in_process

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = 3
VALUES = {
    "csbm-nodes": 300,
    "num-server-rounds": 3,
    "local-epochs": 1,
    "min-clients": 2,
    "seed": 5,
    "privacy": "client-dp",
    "noise-multiplier": 0.5,
    "clipping-norm": 1.0,
    "fraction-train": 0.67,
}
TIMING = ("seconds", "devices", "process")


def _figures(rows: list[dict]) -> list[dict]:
    """The rows as ``metrics.jsonl`` holds them, without timings and the ServerApp's own epsilon column."""
    lines = [json.loads(row_line(row)) for row in rows]
    return [{k: v for k, v in r.items() if not any(t in k for t in TIMING) and k != "client_dp_epsilon"} for r in lines]


@pytest.fixture(scope="module")
def stamen_run(tmp_path_factory):
    """``stamen run --engine inprocess`` on the config: its rows and its run directory."""
    out = tmp_path_factory.mktemp("runs")
    keys = " ".join(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in VALUES.items())
    argv = ["run", "--engine", "inprocess", "--quiet", "--clients", str(CLIENTS)]
    assert stamen([*argv, "-c", f"{keys} output-dir='{out}' run-name='r'"]) == 0
    lines = (out / "r" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines], out / "r"


def config() -> RunConfig:
    return RunConfig.from_flower(dict(VALUES))


def test_the_in_process_engine_gets_the_rows_of_stamen_run(stamen_run):
    rows: list[dict] = []
    run_in_process(config(), CLIENTS, rows.append)
    assert len(rows) == VALUES["num-server-rounds"] + 1
    assert _figures(rows) == _figures(stamen_run[0])


def test_the_privacy_bench_gets_the_figures_of_stamen_run(stamen_run):
    last = stamen_run[0][-1]
    run = federated_run(config(), CLIENTS)
    assert run["final_test_acc"] == last["global_test_acc"]
    assert run["epsilon"] == last["client_dp_epsilon"]


def test_the_attack_bench_gets_the_figures_of_stamen_run(stamen_run):
    assert final_accuracy(config(), CLIENTS) == stamen_run[0][-1]["global_test_acc"]


def test_the_unlearning_experiment_trains_the_weights_of_stamen_run(stamen_run):
    cfg = config()
    initial = new_model(cfg, cfg.csbm_features, cfg.csbm_classes, cfg.seed).state_dict()
    arrays = train_original(cfg, CLIENTS, initial)
    saved = torch.load(stamen_run[1] / "model.pt", weights_only=True)["state_dict"]
    trained = arrays.to_torch_state_dict()
    assert trained.keys() == saved.keys()
    assert all(torch.equal(trained[key], saved[key]) for key in saved)


def _calls_of_the_round_loop(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Name | ast.Attribute | ast.alias)
        and "run_rounds" in (node.id if isinstance(node, ast.Name) else getattr(node, "attr", None) or node.name)
    ]


def test_no_module_but_the_driver_calls_the_round_loop():
    packages = [p for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists() and p.name != "tests"]
    users = {
        str(path.relative_to(ROOT)): lines
        for package in packages
        for path in sorted(package.rglob("*.py"))
        if (lines := _calls_of_the_round_loop(path))
    }
    assert set(users) == {"stamen/server/driver.py"}, users  # stamen/server/loop.py defines it
