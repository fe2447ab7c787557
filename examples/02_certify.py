# %% [markdown]
# # Certificates: how many flipped training labels can change a prediction?
#
# A wide GNN trained with hinge loss behaves like a kernel SVM with the network's neural tangent
# kernel (NTK). `stamen.certify` (the `stamen certify` command's own call) computes each
# architecture's NTK, trains the SVM on the labelled nodes and proves, per target node and per
# budget `k`, whether any flip of up to `k` training labels can change the prediction (an exact
# MILP). The certified accuracy at `k` is the share of targets that are correct *and* certified.
#
# The graph is `csbm-paper`, the paper's binary CSBM generated from the seed.
# `STAMEN_EXAMPLES_SMALL=1` makes it tiny.

# %%
import os
from pathlib import Path

import pandas as pd

import stamen

SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "certify"
SIZE = dict(csbm_nodes=40, labeled_per_class=4, targets=6) if SMALL else dict(csbm_nodes=200, targets=40)

# %%
cert = stamen.certify(
    dataset="csbm-paper", arch=["gcn", "sgc", "mlp"], C=0.5, budgets=[1, 2, 3], out=OUT, overwrite=True, **SIZE
)
print(cert.dir, "holds", sorted(p.name for p in cert.dir.iterdir()))

# %% [markdown]
# Certified accuracy per architecture (rows) and budget (columns). Budget 0 is no attack: the
# clean accuracy.

# %%
table = pd.DataFrame({arch: cert.certified_accuracy(arch) for arch in cert.architectures}).T
table.insert(0, 0, [cert.architectures[arch]["clean_accuracy"] for arch in table.index])
print(table.to_string(float_format="{:.3f}".format))

# %% [markdown]
# Bad input is refused before any work, with the command's one line:

# %%
try:
    stamen.certify(dataset="csbm-paper", arch="gcx", out=OUT / "never")
except ValueError as error:
    print("refused:", error)
