# %% [markdown]
# # Your own task as a plug-in: node classification with label smoothing
#
# A task is a spec (`stamen.TaskSpec`: its figures, headline, pooling, what it admits) and a client part
# (a module whose `PART` is a `stamen.client.tasks.ClientTask`: the model, the local step, the figures, the
# sizes). This one keeps node classification's model, figures and sizes and trains on label-smoothed
# cross-entropy (Szegedy et al. 2016): each training node's target puts `1 - SMOOTHING` on its class and
# spreads `SMOOTHING` over all classes. Installed as a package whose pyproject.toml names it
# (`[project.entry-points."stamen.tasks"] smooth-node-classification = "my_module:TASK"`), every engine
# loads it (docs/extending.md); run as a script, it registers from Python and trains on the in-process engine.

# %%
import os
from pathlib import Path

import torch

import stamen
from stamen.tasks.node_classification.client import NodeClassificationTask

SMOOTHING = 0.2


class LabelSmoothing(NodeClassificationTask):
    """Node classification's client part whose local step minimises label-smoothed cross-entropy."""

    def fit(self, model, job, optimizer, proximal_mu):
        data, epochs = job.data, job.config.local_epochs
        anchor = [p.detach().clone() for p in model.parameters()] if proximal_mu > 0 else []
        model.train()
        total = 0.0
        for _ in range(epochs):
            optimizer.zero_grad()
            logits = model(data.x, data.edge_index)[data.train_mask]
            loss = torch.nn.functional.cross_entropy(logits, data.y[data.train_mask], label_smoothing=SMOOTHING)
            if anchor:  # FedProx's proximal term, when the algorithm asks for it
                loss = loss + 0.5 * proximal_mu * sum((p - a).pow(2).sum() for p, a in zip(model.parameters(), anchor))
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        return total / epochs


PART = LabelSmoothing()

TASK = stamen.TaskSpec(
    "smooth-node-classification",
    "a class per node, trained on label-smoothed cross-entropy (accuracy)",
    client=__name__,  # this module: its PART is the client part
    models_of="node-classification",  # it trains node classification's models
    privacy=("none", "client-dp"),
    privacy_refused="its DP-SGD would clip plain cross-entropy's per-node gradients, not the smoothed loss's",
)

# %%
if __name__ == "__main__":
    SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
    OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "own"
    stamen.register_task(TASK)
    size = {"csbm-nodes": 300, "num-server-rounds": 3} if SMALL else {"csbm-nodes": 1500, "num-server-rounds": 30}
    run = stamen.run({"task": TASK.name, **size}, clients=3, out=OUT, run_name="smooth", overwrite=True)
    print(run.to_pandas()[["round", "global_test_acc", "train_loss"]])
