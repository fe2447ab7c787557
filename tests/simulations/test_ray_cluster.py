"""The Flower engine on a Ray cluster (``--ray-address``), and GPUs as documented on Ray's workers.

Both start Ray (tens of seconds each): ``slow``. The cluster is two nodes on loopback
(:mod:`tests.simulations.ray_nodes`), one CPU each, so the simulation's two actors must run
one on each node; the run's rows must be the in-process engine's.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from stamen.cli.main import main as stamen
from stamen.simulations.flower import flower_environment

from .ray_nodes import ray_cluster

SMALL = "num-server-rounds=2 csbm-nodes=300"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.ray
def test_a_run_on_a_two_node_cluster_runs_on_both_and_gets_the_in_process_rows(tmp_path, same_figures):
    out = tmp_path / "runs"
    with ray_cluster(tmp_path, nodes=2, cpus=1) as address:
        code = stamen(
            ["run", "--quiet", "-c", f"{SMALL} output-dir='{out}' run-name='cluster'", "--clients", "3"]
            + ["--ray-address", address]
        )
    log = out / "cluster" / "run.log"
    assert code == 0, log.read_text()[-3000:] if log.is_file() else "no run.log"
    here = ["run", "--quiet", "--engine", "inprocess", "-c", f"{SMALL} output-dir='{out}' run-name='here'"]
    assert stamen([*here, "--clients", "3"]) == 0
    summary = json.loads((out / "cluster" / "summary.json").read_text())
    assert len(summary["client_nodes"]) == 2, summary["client_nodes"]  # one actor on each node
    assert summary["client_processes"] == 2 and summary["client_peak_memory_gb"] > 0
    assert not summary["degraded"]
    rows = [json.loads(line) for line in (out / "cluster" / "metrics.jsonl").read_text().splitlines()]
    here = [json.loads(line) for line in (out / "here" / "metrics.jsonl").read_text().splitlines()]
    same_figures(rows, here, "rows")


# What a Ray actor sees of the GPUs: its CUDA_VISIBLE_DEVICES and the share the client asks Ray for.
PROBE = """
import json, os, ray
from stamen.client.device import ray_gpu_share
ray.init(address="local", num_cpus=3, num_gpus=2, include_dashboard=False, _temp_dir=os.environ["PROBE_TEMP"])

@ray.remote
class Client:
    def sees(self):
        return os.environ.get("CUDA_VISIBLE_DEVICES"), ray_gpu_share()

shares = [0, 1, 1]
actors = [Client.options(num_cpus=1, num_gpus=share).remote() for share in shares]
print(json.dumps([ray.get(actor.sees.remote()) for actor in actors]))
ray.shutdown()
"""


@pytest.mark.slow
@pytest.mark.ray
def test_a_client_without_a_gpu_share_sees_no_gpu_and_shares_spread_over_the_gpus(tmp_path, monkeypatch):
    # Ray's simulated GPUs (num_gpus=2 on a CPU machine) set CUDA_VISIBLE_DEVICES as real ones would. The
    # environment is the one Stamen gives Flower's simulation, with a user's setting that would show every GPU.
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    env = flower_environment(tmp_path)
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    with tempfile.TemporaryDirectory(prefix="sr-", dir="/tmp") as temp:  # short: Ray's socket paths are limited
        env["PROBE_TEMP"] = temp
        result = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300, check=False
        )
    assert result.returncode == 0, result.stderr[-3000:]
    (none, none_share), (first, first_share), (second, second_share) = json.loads(result.stdout.splitlines()[-1])
    assert none == "" and none_share == []  # no share: no GPU visible, and the client asks Ray and trains on the CPU
    assert {first, second} == {"0", "1"} and [first] == first_share and [second] == second_share
