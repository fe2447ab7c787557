"""Fixtures of the certify tests: small kernels and labels (the oracle retrains on every flip set)."""

import numpy as np
import pytest


def make_problem(seed: int, m: int = 8, num_targets: int = 3, d: int = 4):
    """PSD kernel (features + small graph propagation), +-1 labels with both classes."""
    rng = np.random.default_rng(seed)
    n = m + num_targets
    x = rng.standard_normal((n, d))
    x[: m // 2] += 0.6
    x[m // 2 : m] -= 0.6
    k = x @ x.T + 0.2
    y = np.where(np.arange(m) < m // 2, 1.0, -1.0)
    # some label noise so alphas hit the box
    y[rng.choice(m, size=2, replace=False)] *= -1
    return k[:m, :m], k[m:, :m], np.diag(k)[m:], y


@pytest.fixture(name="make_problem")
def make_problem_fixture():
    """The factory :func:`make_problem` (a fixture, so tests need not import conftest)."""
    return make_problem
