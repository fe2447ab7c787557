# %% [markdown]
# # A privacy audit: does a run leak which nodes it trained on?
#
# `stamen audit privacy` checks a differential-privacy guarantee empirically with one training
# run per setting (Steinke, Nasr and Jagielski, NeurIPS 2023): each client's training nodes lend
# canaries (nodes with a random wrong label), a fair coin keeps each canary in training or takes it
# out, and after training the canaries the model fits best are guessed "in". From how many
# guesses are right follows a lower bound on epsilon, with 95% confidence: no DP at all can give a
# large bound; a DP-SGD run must stay below its accountant's epsilon.
#
# `stamen.audit` is the command's audit from Python: it takes the command's options in snake_case
# and returns the report; with `out` it writes the same JSON as `stamen audit privacy --out`.
# There is no Python function for the audit yet, so this calls the command itself
# (`stamen.cli.main.main` returns its exit code) and reads the JSON it writes.

# %%
import json
import os
from pathlib import Path

import pandas as pd

import stamen

SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "audit"
SIZE = {"csbm_nodes": 300, "rounds": 1, "canaries_per_client": 10} if SMALL else {"rounds": 20}

# %% [markdown]
# The audit keeps each finished setting beside its output and resumes from it; a finished
# output is kept as it is (delete it to audit again).

# %%
output = OUT / "audit.json"
if not output.exists():
    OUT.mkdir(parents=True, exist_ok=True)
    report = stamen.audit(**SIZE, dp_sgd_epsilons=[4], client_dp_epsilons=[], out=output, progress=True)
    assert not report.violated, "an empirical bound above its accountant's epsilon"

# %% [markdown]
# One row per audited setting: the accountant's epsilon (what the run is allowed to spend), the
# audited lower bound (what the canaries prove it at least spent) and the test accuracy it kept.

# %%
audit = json.loads(output.read_text())
table = pd.DataFrame(audit["results"])
print(f"confidence {audit['confidence']}, delta {audit['delta']:g}")
columns = ["privacy", "target_epsilon", "accountant_epsilon", "lower_bound", "correct", "guesses", "global_test_acc"]
print(table[columns].to_string(index=False, float_format="{:.3f}".format))
