"""GCFL in the run's records: before any split it is FedAvg to the bit.

Runs of four clients of graphs-synth, in process. With ``gcfl-eps1=0`` (no mean update norm is below
it) no cluster ever splits, and GCFL's one cluster must train exactly as FedAvg does: the same rows
and the same final weights.
"""

import torch

import stamen
from stamen.contract.figures import ROW_TIMINGS

CLIENTS = 4
RUN = {"task": "graph-classification", "dataset": "graphs-synth", "partitioner": "random", "seed": 0,
       "num-server-rounds": 3}  # fmt: skip
NEVER_SPLITS = {"gcfl-eps1": 0.0, "gcfl-eps2": 0.0, "gcfl-warmup-rounds": 0}
GCFL_ONLY = {"client_processes", *ROW_TIMINGS}  # wall times, memory


def _run(tmp_path, name: str, **values):
    return stamen.run({**RUN, **values}, clients=CLIENTS, out=tmp_path, run_name=name)


def _figures(row: dict) -> dict:
    return {key: value for key, value in row.items() if key not in GCFL_ONLY}


def test_gcfl_that_never_splits_is_fedavg_to_the_bit(tmp_path):
    fedavg = _run(tmp_path, "fedavg", algorithm="fedavg")
    gcfl = _run(tmp_path, "gcfl", algorithm="gcfl", **NEVER_SPLITS)
    assert [row["round"] for row in gcfl.rows] == [0, 1, 2, 3]
    assert [_figures(row) for row in gcfl.rows] == [_figures(row) for row in fedavg.rows]
    weights = [torch.load(run.dir / "model.pt", weights_only=True)["state_dict"] for run in (fedavg, gcfl)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[0])
