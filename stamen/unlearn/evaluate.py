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

Membership inference (:mod:`stamen.unlearn.mia`): members are :math:`D_r`; the attack is fitted
against one set of held-out non-members and scores :math:`D_f` against a disjoint set drawn
from where :math:`D_f` comes from, so that the AUC measures membership rather than how
easy that part of the graph is:

- class request: :math:`D_f` is scored against the forgotten class's test nodes; the
  other classes' test nodes fit the attack;
- node or client request: :math:`D_f` is scored against the requesting client's own
  held-out nodes (validation and test); the other clients' test nodes fit the attack.
  (Scored against every client's test nodes instead, a client whose community is easier
  or harder than the rest shifts the AUC far from 0.5 for the retrained model too.)
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from stamen.models import NodeClassifier
from stamen.unlearn.mia import attack_features, membership_auc
from stamen.unlearn.requests import ForgetRequest, ForgetSplit

METRICS = (
    "acc_remaining",
    "acc_forget",
    "test_global",
    "test_client",
    "test_forgotten_class",
    "test_other_classes",
    "mia_auc",
)


def mia_sets(split: ForgetSplit) -> tuple[list[Tensor], list[Tensor]]:
    """Per original client: masks of the attack's training non-members and of its evaluation non-members."""
    request = split.request
    fit_sets, eval_sets = [], []
    for index, data in enumerate(split.original):
        if request.kind == "class":
            fit_sets.append(data.test_mask & (data.y != request.label))
            eval_sets.append(data.test_mask & (data.y == request.label))
        elif index == request.client:
            fit_sets.append(torch.zeros_like(data.test_mask))
            eval_sets.append(data.test_mask | data.val_mask)
        else:
            fit_sets.append(data.test_mask)
            eval_sets.append(torch.zeros_like(data.test_mask))
    return fit_sets, eval_sets


COUNTS = ("remaining", "forget", "test", "forgotten_class", "other_classes")


@torch.no_grad()
def client_counts(
    model: NodeClassifier, data: Data, forget: Tensor, serving: Data, request: ForgetRequest, stays: bool
) -> dict[str, int]:
    """One client's correct and total counts, ``{name}_correct`` and ``{name}_total`` for :data:`COUNTS`.

    ``data`` is its subgraph as trained (where :math:`D_f`, the mask ``forget``, is measured),
    ``serving`` the subgraph it serves after the request; :math:`D_r` counts only if the
    client ``stays``. Counts rather than ratios, so a server can pool clients exactly.
    """
    model.eval()
    served = model(serving.x, serving.edge_index).argmax(1) == serving.y
    trained = model(data.x, data.edge_index).argmax(1) == data.y
    empty = torch.zeros(0, dtype=torch.bool, device=served.device)
    test = serving.test_mask
    parts = {
        "remaining": served[serving.train_mask] if stays else empty,
        "forget": trained[forget],
        "test": served[test],
        "forgotten_class": served[test & (serving.y == request.label)] if request.kind == "class" else empty,
        "other_classes": served[test & (serving.y != request.label)] if request.kind == "class" else empty,
    }
    counts = {}
    for name, hits in parts.items():
        counts[f"{name}_correct"] = int(hits.sum())
        counts[f"{name}_total"] = int(hits.numel())
    return counts


def accuracies(counts: list[dict[str, int]], request: ForgetRequest, client: dict[str, int] | None = None) -> dict:
    """The accuracies of :data:`METRICS` (all but the MIA AUC) from clients' summed counts.

    ``client`` is the requesting client's counts (its test accuracy), if any.
    """

    def ratio(name: str, rows: list[dict[str, int]]) -> float | None:
        total = sum(r[f"{name}_total"] for r in rows)
        return sum(r[f"{name}_correct"] for r in rows) / total if total else None

    return {
        "acc_remaining": ratio("remaining", counts),
        "acc_forget": ratio("forget", counts),
        "test_global": ratio("test", counts),
        "test_client": ratio("test", [client]) if client is not None else None,
        "test_forgotten_class": ratio("forgotten_class", counts) if request.kind == "class" else None,
        "test_other_classes": ratio("other_classes", counts) if request.kind == "class" else None,
    }


@torch.no_grad()
def evaluate_unlearning(model: NodeClassifier, split: ForgetSplit) -> dict[str, float | None]:
    """Every figure of :data:`METRICS` for ``model`` (``None`` where it does not apply)."""
    model.eval()
    request = split.request
    serving = split.serving()
    remaining = set(split.remaining_clients)
    counts = [
        client_counts(model, data, data.forget_mask, served, request, index in remaining)
        for index, (data, served) in enumerate(zip(split.original, serving))
    ]
    client = counts[request.client] if request.client is not None else None

    trained_logits = [model(d.x, d.edge_index) for d in split.original]
    features = [attack_features(lg, d.y) for d, lg in zip(split.original, trained_logits)]
    fit_sets, eval_sets = mia_sets(split)
    members = np.vstack([f[(d.train_mask & ~d.forget_mask).numpy()] for f, d in zip(features, split.original)])
    targets = np.vstack([f[d.forget_mask.numpy()] for f, d in zip(features, split.original)])
    fit_non = np.vstack([f[m.numpy()] for f, m in zip(features, fit_sets)])
    eval_non = np.vstack([f[m.numpy()] for f, m in zip(features, eval_sets)])
    return {**accuracies(counts, request, client), "mia_auc": membership_auc(members, fit_non, targets, eval_non)}
