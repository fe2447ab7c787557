# %% [markdown]
# # Your own model as a plug-in: a residual GCN encoder under the run's head
#
# A spec naming its encoder factory by module path. Installed as a package whose pyproject.toml names it
# (`[project.entry-points."stamen.models"] resgcn = "my_module:MODEL"`), every engine loads it
# (docs/extending.md); run as a script, it registers from Python and trains on the in-process engine.

# %%
import os
from pathlib import Path

import torch
from torch_geometric.nn import GCNConv

import stamen


class ResidualGCN(torch.nn.Module):
    """h = relu(x W); then num_layers - 1 times h = h + relu(GCN(h)): each node's embedding of width hidden."""

    def __init__(self, in_dim: int, hidden: int, num_layers: int, dropout: float) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(in_dim, hidden)
        self.convs = torch.nn.ModuleList(GCNConv(hidden, hidden) for _ in range(num_layers - 1))
        self.dropout = dropout

    def forward(self, x, edge_index):
        h = torch.relu(self.inp(torch.nn.functional.dropout(x, self.dropout, self.training)))
        for conv in self.convs:
            h = h + torch.relu(conv(torch.nn.functional.dropout(h, self.dropout, self.training), edge_index))
        return h


def make_encoder(in_dim: int, hidden: int, num_layers: int, dropout: float):
    return ResidualGCN(in_dim, hidden, num_layers, dropout), hidden


MODEL = stamen.ModelSpec("resgcn", "a linear layer, then residual GCN layers", encoder=f"{__name__}:make_encoder")

# %%
if __name__ == "__main__":
    SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
    OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "own"
    stamen.register_model(MODEL)
    size = {"csbm-nodes": 300, "num-server-rounds": 3} if SMALL else {"csbm-nodes": 1500, "num-server-rounds": 30}
    run = stamen.run({"model": "resgcn", **size}, clients=3, out=OUT, run_name="resgcn", overwrite=True)
    print(run.to_pandas()[["round", "global_test_acc", "train_loss"]])
