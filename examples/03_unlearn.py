# %% [markdown]
# # Unlearning: forget a class from a trained federation
#
# `stamen.run` trains a federation; `stamen.unlearn` (the `stamen unlearn` command's own call)
# then forgets a request (a client, some of a client's nodes, or a class) with each method asked
# for, and compares them with the original model and with retraining from scratch without the
# forgotten data. `STAMEN_EXAMPLES_SMALL=1` keeps it to seconds.

# %%
import os
from pathlib import Path

import pandas as pd

import stamen

SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "unlearn"
SETTINGS = {"csbm-nodes": 300, "num-server-rounds": 3} if SMALL else {"csbm-nodes": 1500, "num-server-rounds": 30}
METHODS = ["wash"] if SMALL else ["wash", "laf", "finetune"]

# %%
run = stamen.run(SETTINGS, clients=3, out=OUT, run_name="trained", overwrite=True)
print("trained:", run.summary["final"]["global_test_acc"], "global test accuracy")

# %% [markdown]
# Forget class 1. Each method's figures are means over the model seeds: accuracy on the
# remaining training nodes (Dr), on the forgotten ones (Df), on the test nodes of the forgotten
# class and of the others, and a membership-inference AUC (0.5: the attack cannot tell
# forgotten nodes from unseen ones).

# %%
(forgot,) = stamen.unlearn(run, "class:1", methods=METHODS, overwrite=True)
print(forgot.dir, "holds", sorted(p.name for p in forgot.dir.iterdir()))
table = pd.DataFrame(forgot.result["mean"]).T
print(table.to_string(float_format="{:.3f}".format))
