# %% [markdown]
# # Your own dataset as a plug-in: a graph in two text files
#
# A dataset is a spec (`stamen.DatasetSpec`). This one is a *form*, `edges:STEM`, whose parameter names two
# files under the data root: `<root>/edges/STEM.edges` (one edge `i j` a line, node ids from 0) and
# `<root>/edges/STEM.nodes` (one node a line: its class, then its features, comma-separated). Its `check`
# keeps the parameter a plain file stem (no folder: nothing outside the data root is read), its `files`
# name what the size pre-flight weighs, and its `reader` returns one graph as a PyG `Data`.
# Installed as a package whose pyproject.toml names it
# (`[project.entry-points."stamen.datasets"] edges = "my_module:DATASET"`), every engine loads it
# (docs/extending.md); run as a script, it writes a small graph, registers from Python and trains on the
# in-process engine.

# %%
import os
import re
from pathlib import Path

import numpy as np

import stamen

STEM = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check(name: str) -> str | None:
    """What is wrong with ``edges:STEM`` (one line), or None."""
    if STEM.fullmatch(name.partition(":")[2]):
        return None
    return f"dataset {name!r}: edges:STEM takes a file stem (letters, digits, _ -) and reads <root>/edges/STEM.*"


def files(name: str, root: Path) -> list[Path]:
    """The two files of ``edges:STEM`` under data root ``root``."""
    stem = name.partition(":")[2]
    return [root / "edges" / f"{stem}.edges", root / "edges" / f"{stem}.nodes"]


def read(name: str, root: Path, seed: int):
    """The graph: ``x`` (n x d), ``edge_index`` (2 x E), ``y`` (n classes 0..C-1) and ``num_classes``."""
    import torch
    from torch_geometric.data import Data

    edge_path, node_path = files(name, root)
    for path in (edge_path, node_path):
        if not path.is_file():
            raise FileNotFoundError(f"dataset {name!r}: place {path.name} under {path.parent}/")
    nodes = np.loadtxt(node_path, delimiter=",", ndmin=2)  # numbers only: nothing read executes code
    edges = np.loadtxt(edge_path, dtype=np.int64, ndmin=2).reshape(-1, 2)
    if edges.size and (edges.min() < 0 or edges.max() >= len(nodes)):
        raise ValueError(f"dataset {name!r}: {edge_path.name} names a node outside 0..{len(nodes) - 1}")
    labels = nodes[:, 0].astype(np.int64)
    return Data(
        x=torch.from_numpy(nodes[:, 1:]).float(),
        edge_index=torch.from_numpy(edges.T.copy()),
        y=torch.from_numpy(labels),
        num_classes=int(labels.max()) + 1,
    )


DATASET = stamen.DatasetSpec(
    "edges:",
    "a graph in two text files, <root>/edges/STEM.edges and STEM.nodes",
    reader=f"{__name__}:read",
    parameter="STEM",
    check=f"{__name__}:check",
    files=f"{__name__}:files",
)


def write_graph(root: Path, stem: str, nodes_per_class: int, classes: int, seed: int = 0) -> None:
    """A graph of ``classes`` communities (dense inside, sparse between), features near each class's mean."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), nodes_per_class)
    n = labels.size
    pairs = rng.integers(0, n, size=(8 * n, 2))
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    keep = same | (rng.random(len(pairs)) < 0.1)
    features = np.eye(classes)[labels] + rng.normal(0, 0.8, size=(n, classes))
    (root / "edges").mkdir(parents=True, exist_ok=True)
    np.savetxt(root / "edges" / f"{stem}.edges", pairs[keep], fmt="%d")
    np.savetxt(root / "edges" / f"{stem}.nodes", np.column_stack([labels, features]), delimiter=",", fmt="%g")


# %%
if __name__ == "__main__":
    SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
    OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "own-dataset"
    write_graph(OUT / "data", "communities", nodes_per_class=40 if SMALL else 300, classes=3)
    stamen.register_dataset(DATASET)
    rounds = 3 if SMALL else 30
    config = {"dataset": "edges:communities", "data-root": str(OUT / "data"), "num-server-rounds": rounds}
    run = stamen.run(config, clients=3, out=OUT, run_name="edges", overwrite=True)
    print(run.to_pandas()[["round", "global_test_acc", "train_loss"]])
