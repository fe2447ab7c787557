"""On a machine with a GPU, clients train on it through the real ClientApp and learn as well as on the CPU.

CI has no GPU, so there this test is reported as skipped with its reason; run it on a GPU
machine (``python -m pytest tests/client/test_cuda_training.py``).
"""

import pytest
import torch

from stamen.client.device import choose_device
from stamen.contract.run_config import RunConfig
from stamen.simulations.inprocess import run_in_process

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; CI machines have none")


def _federated_run(device: str) -> list[dict]:
    rows: list[dict] = []
    values = {"dataset": "csbm", "csbm-nodes": 900, "num-server-rounds": 5, "local-epochs": 10, "device": device}
    run_in_process(RunConfig.from_flower(values), 3, rows.append)
    return rows


@needs_cuda
def test_clients_train_on_the_gpu_and_learn_as_well_as_on_the_cpu():
    assert choose_device("auto").type == "cuda"
    on_cpu, on_gpu = _federated_run("cpu"), _federated_run("auto")
    assert {d for row in on_gpu for d in row.get("devices", [])} == {f"cuda:{torch.cuda.current_device()}"}
    assert {d for row in on_cpu for d in row.get("devices", [])} == {"cpu"}
    accuracy = [[row["global_test_acc"] for row in rows if "global_test_acc" in row][-1] for rows in (on_cpu, on_gpu)]
    assert min(accuracy) > 0.8, accuracy  # dropout draws differ between devices, so not equal
