"""Stamen's Python API: the calls the ``stamen`` command makes, with results as objects.

    import stamen

    run = stamen.run({"num-server-rounds": 20, "csbm-nodes": 900}, clients=3)
    run.rows[-1]["global_test_acc"], run.summary["final"], run.dir
    stamen.load(run.dir).to_pandas()
    stamen.sweep(grid={"lr": [0.01, 0.05]}, seeds=[0, 1], num_server_rounds=20).rows
    stamen.unlearn(run, "class:1", methods=["wash"])[0].result["mean"]
    stamen.certify(dataset="csbm-paper", arch="gcn", budgets=[1, 2], out="cert").certified_accuracy("gcn")
    stamen.tune(space={"lr": "log:1e-3..1e-1"}, trials=20, name="lr", num_server_rounds=20).best_params

See docs/api.md. Bad input is a ``ValueError`` whose message is the line the command prints.
"""

from server.rundir import RunStatus
from simulations.errors import RunFailed, RunInterrupted
from stamen.certifying import Certificates, certify
from stamen.runs import Run, load, run
from stamen.sweeps import Sweep, sweep
from stamen.tuning import Tuned, tune
from stamen.unlearning import Unlearned, unlearn

__all__ = [
    "Certificates",
    "Run",
    "RunFailed",
    "RunInterrupted",
    "RunStatus",
    "Sweep",
    "Tuned",
    "Unlearned",
    "certify",
    "load",
    "run",
    "sweep",
    "tune",
    "unlearn",
]
