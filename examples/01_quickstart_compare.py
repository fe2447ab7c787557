# %% [markdown]
# # Quickstart: one federated run, then FedAvg, FedProx and Ditto side by side
#
# A run trains a GNN over a graph cut into client subgraphs. `stamen.run` is `stamen run`'s own
# call: it checks the config, writes a run directory (config, one row per round in
# `metrics.jsonl`, `summary.json`, `curves.png`, the model) and returns a `stamen.Run`.
#
# The graph is `csbm`, a contextual stochastic block model generated from the seed: no files,
# no network. Set `STAMEN_EXAMPLES_SMALL=1` for a run of seconds (the test suite does);
# outputs go to `$STAMEN_EXAMPLES_OUT` (default `examples-out/` under the current folder).

# %%
import os
from pathlib import Path

import pandas as pd

import stamen

SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "quickstart"
SIZE = {"csbm-nodes": 300, "num-server-rounds": 3} if SMALL else {"csbm-nodes": 1500, "num-server-rounds": 30}
SETTINGS = {**SIZE, "local-epochs": 3}  # several local steps: FedProx's pull towards the global model shows
CLIENTS = 3 if SMALL else 5

# %% [markdown]
# ## One run
#
# Round 0 is the initial model's evaluation. The *global* accuracies are the aggregated model's
# on every client's nodes, pooled over all clients' nodes; the *client* accuracies (`test_acc`)
# are each client's model after its local training.

# %%
run = stamen.run(SETTINGS, clients=CLIENTS, out=OUT, run_name="fedavg", overwrite=True)
print(run.dir, run.status)
run.to_pandas()[["round", "global_test_acc", "global_val_acc", "train_loss"]]

# %% [markdown]
# ## Three algorithms on the same graph, partition and seed
#
# FedAvg averages the clients' weights; FedProx adds a proximal term that keeps each client near
# the global model; Ditto (personalised) also trains a personal model per client, held near the
# global one. For a personalised algorithm the client accuracy is the personal models'.

# %%
runs = {"fedavg": run}
for algorithm in ("fedprox", "ditto"):
    runs[algorithm] = stamen.run(SETTINGS, clients=CLIENTS, out=OUT, algorithm=algorithm, run_name=algorithm,
                                 overwrite=True)  # fmt: skip

# %% [markdown]
# Each run's rows as a DataFrame (`Run.to_pandas()`), one table of the last round; the round of
# best validation accuracy comes from each run's own `summary.json`.

# %%
last = pd.DataFrame(
    {name: r.to_pandas().iloc[-1][["global_test_acc", "test_acc", "train_loss"]] for name, r in runs.items()}
).T
last["best_round"] = [r.summary["best_round"] for r in runs.values()]
last["global_test_acc_at_best_val"] = [r.summary["best"]["global_test_acc"] for r in runs.values()]
print(last.to_string(float_format="{:.3f}".format))

# %% [markdown]
# Every run directory also holds `curves.png` and `curves.svg` (accuracy and loss per round, the best round
# marked). `stamen compare OUT/fedavg OUT/fedprox OUT/ditto --plot compare.png` overlays them.
