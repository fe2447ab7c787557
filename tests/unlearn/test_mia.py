"""The membership-inference attack: logistic regression and AUC on known cases."""

import numpy as np
import torch

from unlearn.mia import LogisticRegression, attack_features, auc, membership_auc


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
