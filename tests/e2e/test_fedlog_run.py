"""FedLoG as real Flower processes (``stamen run``) against FedAvg, with a class withheld at every client.

FedAvg runs the same app code in process (:mod:`stamen.simulations.inprocess`), which keeps
the test to one Flower start-up.
"""

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from stamen.contract.run_config import RunConfig
from stamen.simulations.inprocess import run_in_process

SETTING = (
    "num-server-rounds=5 local-epochs=5 seed=0 csbm-nodes=900 csbm-classes=4 csbm-signal=2.0 "
    "partitioner='label-dirichlet' dirichlet-alpha=5.0 missing-classes=1 unseen-node-frac=0.2 new-client=true "
    "fedlog-warmup-epochs=30 fedlog-generator-epochs=30"
)


def _flower_run(tmp_path, algorithm: str) -> list[dict]:
    run_config = f"{SETTING} algorithm='{algorithm}' output-dir='{tmp_path}' run-name='{algorithm}'"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "stamen.cli.main",
            "run",
            "-c",
            run_config,
            "--federation-config",
            "num-supernodes=3 client-resources-num-cpus=1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [json.loads(line) for line in (tmp_path / algorithm / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.ray
def test_fedlog_recognises_a_withheld_class_better_than_fedavg(tmp_path, same_in_process):
    fedlog = _flower_run(tmp_path, "fedlog")
    # the in-process engine computes the same figures (FedLoG's synthetic nodes, generators and settings included)
    same_in_process(tmp_path / "fedlog", f"{SETTING} algorithm='fedlog' output-dir='{tmp_path}'")
    fedavg: list[dict] = []
    values = dict(item.split("=", 1) for item in SETTING.split())
    config = RunConfig.from_flower({k: json.loads(v.replace("'", '"')) for k, v in values.items()})
    run_in_process(dataclasses.replace(config, algorithm="fedavg"), 3, fedavg.append)
    assert [row["round"] for row in fedlog] == [0, 1, 2, 3, 4, 5]
    final = fedlog[-1]
    for setting in ("test", "unseen_node", "missing_class", "new_client"):
        assert 0.0 <= final[f"{setting}_acc"] <= 1.0 and 0.0 <= final[f"global_{setting}_acc"] <= 1.0
    assert final["test_acc"] > 0.6  # the prototype classifier learned the seen classes
    # the personalised models after local training, as FedLoG evaluates them
    assert final["missing_class_acc"] > fedavg[-1]["missing_class_acc"]
