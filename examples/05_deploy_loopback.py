# %% [markdown]
# # A deployment on this machine: SuperLink and SuperNodes over TLS on the loopback
#
# `stamen deploy local --loopback` does on one machine what a real deployment does on several
# (docs/deployment.md): certificates, a SuperLink with TLS and node authentication, one
# SuperNode per client (each reading only its own partition from its own data folder), the
# SuperNodes' keys registered, then the run submitted from the operator's seat. Every process it
# starts is stopped when it ends (or on Ctrl-C). The run directory is the same as `stamen run`'s,
# so `stamen.load` reads it.
#
# `stamen.deploy.local` is the command from Python: the run config as `stamen.run` takes it. It
# starts processes and takes a minute or more.
# No Python function starts a deployment, so this calls the command (`stamen.cli.main.main`).
# It starts processes and takes a minute or more.

# %%
import os
from pathlib import Path

import stamen

SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
OUT = (Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "deploy").absolute()
ROUNDS = 2 if SMALL else 10

# %%
config = {"num-server-rounds": ROUNDS, "csbm-nodes": 300, "run-name": "deployed", "overwrite": True}
deployed = stamen.deploy.local(config, clients=3, loopback=True, workdir=OUT / "work", out=OUT / "runs", progress=True)

# %%
run = stamen.load(deployed.run_dir)
print(run.status, len(run.rows) - 1, "rounds")
print(run.to_pandas()[["round", "global_test_acc", "clients"]].to_string(index=False))
