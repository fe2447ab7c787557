# %% [markdown]
# # Your own partitioner as a plug-in: contiguous ranges of node ids
#
# A partitioner is a spec (`stamen.PartitionerSpec`) naming a function
# `function(data, num_parts, seed, alpha) -> K arrays of ids` that together cover each node once. This one
# cuts the node ids 0..n-1 into K contiguous ranges of sizes differing by at most one: on a graph whose ids
# follow its structure (a crawl order, a time order) the clients get the regions the ids run through.
# Installed as a package whose pyproject.toml names it
# (`[project.entry-points."stamen.partitioners"] ranges = "my_module:PARTITIONER"`), every engine loads it
# (docs/extending.md); run as a script, it registers from Python and trains on the in-process engine.

# %%
import os
from pathlib import Path

import numpy as np

import stamen


def contiguous_ranges(data, num_parts: int, seed: int, alpha: float) -> list[np.ndarray]:
    """Node ids 0..n-1 cut into ``num_parts`` contiguous ranges (no draw: ``seed`` and ``alpha`` are unused)."""
    return np.array_split(np.arange(int(data.num_nodes)), num_parts)


PARTITIONER = stamen.PartitionerSpec(
    "ranges", "contiguous ranges of node ids, K of them", function=f"{__name__}:contiguous_ranges"
)

# %%
if __name__ == "__main__":
    SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
    OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "own"
    stamen.register_partitioner(PARTITIONER)
    size = {"csbm-nodes": 300, "num-server-rounds": 3} if SMALL else {"csbm-nodes": 1500, "num-server-rounds": 30}
    run = stamen.run({"partitioner": "ranges", **size}, clients=3, out=OUT, run_name="ranges", overwrite=True)
    print(run.to_pandas()[["round", "global_test_acc", "train_loss"]])
