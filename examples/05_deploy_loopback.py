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
# No Python function starts a deployment, so this calls the command (`stamen.cli.main.main`).
# It starts processes and takes a minute or more.

# %%
import os
from pathlib import Path

import stamen
from stamen.cli.main import main as stamen_command

SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
OUT = (Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "deploy").absolute()
ROUNDS = 2 if SMALL else 10

# %%
config = f"num-server-rounds={ROUNDS} csbm-nodes=300 output-dir='{OUT / 'runs'}' run-name='deployed' overwrite=true"
code = stamen_command(["deploy", "local", "--loopback", "--clients", "3", "--workdir", str(OUT / "work"), "-c", config])
assert code == 0, f"stamen deploy local exited {code}"

# %%
run = stamen.load(OUT / "runs" / "deployed")
print(run.status, len(run.rows) - 1, "rounds")
print(run.to_pandas()[["round", "global_test_acc", "clients"]].to_string(index=False))
