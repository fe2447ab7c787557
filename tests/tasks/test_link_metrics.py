"""Link prediction's figures against brute-force computations of their definitions."""

import numpy as np
import pytest
import torch

from stamen.tasks.link_prediction.metrics import auc, average_precision, hits_at_k, link_figures
from stamen.tasks.link_prediction.model import build_link_predictor
from stamen.tasks.link_prediction.training import sample_negatives


def _brute_auc(pos, neg):
    return np.mean([(p > q) + 0.5 * (p == q) for p in pos for q in neg])


def _brute_ap(pos, neg):
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    total, recall_before = 0.0, 0.0
    for t in sorted(set(scores.tolist()), reverse=True):
        called = scores >= t
        precision = labels[called].sum() / called.sum()
        recall = labels[called].sum() / len(pos)
        total += (recall - recall_before) * precision
        recall_before = recall
    return total


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_and_ap_match_their_definitions_ties_included(seed):
    rng = np.random.default_rng(seed)
    pos = rng.integers(0, 6, size=37).astype(float)  # few distinct values: many ties
    neg = rng.integers(0, 5, size=29).astype(float)
    assert auc(pos, neg) == pytest.approx(_brute_auc(pos, neg), abs=1e-12)
    assert average_precision(pos, neg) == pytest.approx(_brute_ap(pos, neg), abs=1e-12)
    pos, neg = rng.normal(1, 1, 50), rng.normal(0, 1, 70)
    assert auc(pos, neg) == pytest.approx(_brute_auc(pos, neg), abs=1e-12)
    assert average_precision(pos, neg) == pytest.approx(_brute_ap(pos, neg), abs=1e-12)


def test_hits_at_k_counts_edges_above_the_kth_non_edge():
    neg = np.array([0.1, 0.9, 0.5, 0.7, 0.3])
    pos = np.array([0.8, 0.6, 0.95, 0.2])
    assert hits_at_k(pos, neg, 2) == pytest.approx(2 / 4)  # 2nd best non-edge 0.7: 0.8 and 0.95 above
    assert hits_at_k(pos, neg, 1) == pytest.approx(1 / 4)
    assert hits_at_k(pos, neg, 4) == pytest.approx(3 / 4)  # 4th best non-edge 0.3: all but 0.2 above
    assert hits_at_k(pos, neg, 6) is None  # fewer non-edges than K: not computable, never 1
    assert link_figures(pos, neg, 6).hits is None and link_figures(pos, neg, 6).auc is not None


def test_no_edges_no_figure():
    figures = link_figures(np.array([]), np.array([0.3]), 5)
    assert figures.auc is None and figures.ap is None and figures.hits is None


def test_sampled_negatives_avoid_known_edges_and_self_loops():
    torch.manual_seed(0)
    n = 20
    known = torch.tensor(sorted(u * n + v for u in range(n) for v in range(u + 1, n) if (u + v) % 3))
    pairs = sample_negatives(n, 30, known, torch.device("cpu"))
    assert pairs.size(1) == 30
    assert torch.all(pairs[0] < pairs[1])
    assert not torch.isin(pairs[0] * n + pairs[1], known).any()


@pytest.mark.parametrize("decoder", ["dot", "mlp"])
def test_scores_are_symmetric(decoder):
    torch.manual_seed(0)
    model = build_link_predictor("gcn", 5, 8, 2, 0.0, decoder).eval()
    z = model(torch.randn(6, 5), torch.tensor([[0, 1, 2], [1, 2, 3]]))
    pairs = torch.tensor([[0, 2, 4], [1, 5, 3]])
    assert torch.allclose(model.score(z, pairs), model.score(z, pairs.flip(0)))
