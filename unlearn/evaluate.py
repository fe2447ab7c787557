r"""How well a model has forgotten: accuracies on :math:`D_r`, :math:`D_f`, test nodes, and an MIA AUC.

Which graph each figure is measured on:

- :math:`D_r` and test accuracies on the *serving* graphs: the remaining subgraphs (the
  forgotten nodes and their edges removed). A client that left is served on its
  original subgraph, so its test nodes still count in the global test accuracy.
- :math:`D_f` accuracy and every membership-inference feature on the graphs *as
  trained* (the forgotten nodes only exist there), for every model alike.

Test figures: ``test_global`` (every client's test nodes), ``test_client`` (the
requesting client's), and for class requests ``test_forgotten_class`` and
``test_other_classes``.

Membership inference (:mod:`unlearn.mia`): members are :math:`D_r`; non-members are test
nodes, split in two disjoint halves by the seed, one to fit the attack and one to
score :math:`D_f` against. For a class request the non-members :math:`D_f` is scored
against are the forgotten class's test nodes (the other classes' test nodes fit the
attack), so both sides of the AUC come from the same class.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from models import NodeClassifier
from unlearn.mia import attack_features, membership_auc
from unlearn.requests import ForgetSplit

METRICS = (
    "acc_remaining",
    "acc_forget",
    "test_global",
    "test_client",
    "test_forgotten_class",
    "test_other_classes",
    "mia_auc",
)


def _accuracy(hits: list[Tensor]) -> float | None:
    hits = torch.cat(hits) if hits else torch.zeros(0, dtype=torch.bool)
    return float(hits.to(torch.float64).mean()) if hits.numel() else None


def mia_sets(split: ForgetSplit, seed: int) -> tuple[list[Tensor], list[Tensor]]:
    """Per original client: masks of the attack's training non-members and of its evaluation non-members."""
    generator = torch.Generator().manual_seed(10_007 * seed + 17)
    fit_sets, eval_sets = [], []
    for data in split.original:
        test = data.test_mask
        if split.request.kind == "class":
            fit_sets.append(test & (data.y != split.request.label))
            eval_sets.append(test & (data.y == split.request.label))
            continue
        coin = torch.rand(int(data.num_nodes), generator=generator) < 0.5
        fit_sets.append(test & coin)
        eval_sets.append(test & ~coin)
    return fit_sets, eval_sets


@torch.no_grad()
def evaluate_unlearning(model: NodeClassifier, split: ForgetSplit, seed: int = 0) -> dict[str, float | None]:
    """Every figure of :data:`METRICS` for ``model`` (``None`` where it does not apply)."""
    model.eval()
    request = split.request
    serving = split.serving()
    served_logits = [model(d.x, d.edge_index) for d in serving]
    trained_logits = [model(d.x, d.edge_index) for d in split.original]
    remaining = set(split.remaining_clients)

    dr_hits, test_hits, forgot_class_hits, other_class_hits = [], [], [], []
    for index, (data, logits) in enumerate(zip(serving, served_logits)):
        hits = logits.argmax(1) == data.y
        if index in remaining:
            dr_hits.append(hits[data.train_mask])
        test_hits.append(hits[data.test_mask])
        if request.kind == "class":
            forgot_class_hits.append(hits[data.test_mask & (data.y == request.label)])
            other_class_hits.append(hits[data.test_mask & (data.y != request.label)])
    df_hits = [(lg.argmax(1) == d.y)[d.forget_mask] for d, lg in zip(split.original, trained_logits)]
    client_test = None
    if request.client is not None:
        data, logits = serving[request.client], served_logits[request.client]
        client_test = _accuracy([(logits.argmax(1) == data.y)[data.test_mask]])

    features = [attack_features(lg, d.y) for d, lg in zip(split.original, trained_logits)]
    fit_sets, eval_sets = mia_sets(split, seed)
    members = np.vstack([f[(d.train_mask & ~d.forget_mask).numpy()] for f, d in zip(features, split.original)])
    targets = np.vstack([f[d.forget_mask.numpy()] for f, d in zip(features, split.original)])
    fit_non = np.vstack([f[m.numpy()] for f, m in zip(features, fit_sets)])
    eval_non = np.vstack([f[m.numpy()] for f, m in zip(features, eval_sets)])
    return {
        "acc_remaining": _accuracy(dr_hits),
        "acc_forget": _accuracy(df_hits),
        "test_global": _accuracy(test_hits),
        "test_client": client_test,
        "test_forgotten_class": _accuracy(forgot_class_hits) if request.kind == "class" else None,
        "test_other_classes": _accuracy(other_class_hits) if request.kind == "class" else None,
        "mia_auc": membership_auc(members, fit_non, targets, eval_non),
    }
