"""The membership-inference attack: logistic regression and AUC on known cases."""

import numpy as np
import pytest
import torch

from stamen.contract.requests import parse_request
from stamen.graphs import build_federation
from stamen.unlearn.evaluate import mia_sets
from stamen.unlearn.mia import LogisticRegression, attack_features, auc, membership_auc
from stamen.unlearn.requests import split_federation


def test_auc_known_values():
    assert auc(np.array([3.0, 4.0]), np.array([1.0, 2.0])) == 1.0
    assert auc(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == 0.0
    assert auc(np.array([1.0, 3.0]), np.array([2.0, 2.0])) == 0.5
    assert auc(np.array([1.0]), np.array([1.0])) == 0.5


def test_logistic_regression_separates_and_matches_the_optimum():
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(1.0, 1.0, (300, 3)), rng.normal(-1.0, 1.0, (300, 3))])
    y = np.r_[np.ones(300), np.zeros(300)]
    model = LogisticRegression(l2=0.0).fit(x, y)
    scores = model.decision_function(x)
    assert auc(scores[:300], scores[300:]) > 0.9
    # at the optimum the (balanced) gradient vanishes
    z = np.hstack([(x - model.mean_) / model.scale_, np.ones((600, 1))])
    p = 1 / (1 + np.exp(-(z @ model.coef_)))
    assert np.abs(z.T @ ((p - y) / 600)).max() < 1e-8


def test_attack_features_and_membership_auc():
    logits = torch.tensor([[4.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    features = attack_features(logits, torch.tensor([0, 1]))
    assert features.shape == (2, 5)
    assert np.isclose(features[1, 0], np.log(3)) and np.isclose(features[1, 1], np.log(3))
    assert np.all(np.diff(features[:, 2:], axis=1) <= 0)
    rng = np.random.default_rng(1)
    members = rng.normal(1.0, 1.0, (200, 4))
    non = rng.normal(0.0, 1.0, (200, 4))
    assert membership_auc(members, non, rng.normal(1.0, 1.0, (100, 4)), rng.normal(0.0, 1.0, (100, 4))) > 0.85
    assert abs(membership_auc(members, non, rng.normal(0.0, 1.0, (300, 4)), rng.normal(0.0, 1.0, (300, 4))) - 0.5) < 0.1


@pytest.mark.parametrize("text", ["client:1", "nodes:1:0.5", "class:2"])
def test_mia_scores_forgotten_nodes_against_non_members_from_where_they_come(small_config, text):
    federation = build_federation(small_config().federation(3))
    split = split_federation(federation.clients, parse_request(text, 3, 4), seed=0)
    fit_sets, eval_sets = mia_sets(split)
    for index, (data, fit, scored) in enumerate(zip(split.original, fit_sets, eval_sets)):
        assert not bool((fit & scored).any()) and not bool(((fit | scored) & data.train_mask).any())
        if text == "class:2":
            assert torch.equal(scored, data.test_mask & (data.y == 2))
            assert torch.equal(fit, data.test_mask & (data.y != 2))
        elif index == 1:  # the requesting client: its own held-out nodes only score
            assert torch.equal(scored, data.test_mask | data.val_mask) and not bool(fit.any())
        else:
            assert torch.equal(fit, data.test_mask) and not bool(scored.any())
