"""FedLoG's server-side condensation against hand computations."""

import numpy as np
import pytest

from stamen.algorithms.fedlog.condensation import class_weights, condense, per_class_average


def test_class_weights_are_class_shares_with_a_uniform_fallback():
    counts = np.array([[3, 0, 1], [1, 0, 0], [0, 0, 3]])  # class 1: nobody holds it
    weights = class_weights(counts)
    assert np.allclose(weights[:, 0], [0.75, 0.25, 0.0])
    assert np.allclose(weights[:, 1], [1 / 3, 1 / 3, 1 / 3])
    assert np.allclose(weights[:, 2], [0.25, 0.0, 0.75])
    assert np.allclose(weights.sum(0), 1.0)


def test_condensation_weights_permuted_slots_by_class_share():
    # 2 clients, 2 classes, 2 slots per class, 1 feature: S[k, c, j] = 100k + 10c + j
    synthetic = np.array([[[[0.0], [1.0]], [[10.0], [11.0]]], [[[100.0], [101.0]], [[110.0], [111.0]]]])
    weights = class_weights(np.array([[3, 0], [1, 0]]))  # class 0: 3/4 and 1/4; class 1: nobody, 1/2 each
    permutations = np.array([[1, 0], [0, 1]])  # client 0 swaps its slots, client 1 keeps them
    condensed = condense(synthetic, weights, permutations)
    expected = np.array(
        [
            [[0.75 * 1 + 0.25 * 100], [0.75 * 0 + 0.25 * 101]],
            [[0.5 * 11 + 0.5 * 110], [0.5 * 10 + 0.5 * 111]],
        ]
    )
    assert condensed.shape == (2, 2, 1)
    assert np.allclose(condensed, expected)


def test_condensation_needs_one_permutation_per_client():
    with pytest.raises(ValueError, match="one permutation of 2 slots per client"):
        condense(np.zeros((2, 1, 2, 3)), np.ones((2, 1)) / 2, np.array([[0, 1]]))


def test_generators_are_averaged_per_class_with_the_class_shares():
    states = [{"w": np.array([1.0, 2.0])}, {"w": np.array([3.0, 6.0])}]
    weights = class_weights(np.array([[1, 0], [3, 0]]))
    averaged = per_class_average(states, weights)
    assert set(averaged) == {"0.w", "1.w"}
    assert np.allclose(averaged["0.w"], [0.25 * 1 + 0.75 * 3, 0.25 * 2 + 0.75 * 6])
    assert np.allclose(averaged["1.w"], [2.0, 4.0])  # nobody holds class 1: plain mean
