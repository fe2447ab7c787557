"""A round whose global weights or training loss are not finite stops the run, naming the round."""

import math

import numpy as np
import pytest
from flwr.app import ArrayRecord

from stamen.contract.arrays import numpy_array
from stamen.server.divergence import DivergedError, check_round, non_finite


def _record(**arrays: np.ndarray) -> ArrayRecord:
    return ArrayRecord({name: numpy_array(values) for name, values in arrays.items()})


def test_finite_weights_and_loss_pass():
    check_round(3, 0.5, _record(w=np.ones((4, 2), np.float32), steps=np.array([7], np.int64)))
    check_round(3, None, None)  # an algorithm that does not aggregate, a round without a loss


@pytest.mark.parametrize("bad,kind", [(math.nan, "nan"), (math.inf, "inf"), (-math.inf, "inf")])
def test_a_non_finite_weight_names_the_round_and_the_array(bad, kind):
    weights = np.zeros((3, 3), np.float32)
    weights[1, 2] = bad
    arrays = _record(head=np.ones(2, np.float64), body=weights)
    assert non_finite(arrays) == ("body", kind)
    expected = f"^round 3: the global model's weights are not finite \\({kind} in body\\); training diverged: lower lr"
    with pytest.raises(DivergedError, match=expected):
        check_round(3, 0.1, arrays)


def test_a_non_finite_loss_names_the_round():
    with pytest.raises(DivergedError, match=r"^round 5: the clients' training loss is not finite \(nan\); .*lower lr"):
        check_round(5, math.nan, _record(w=np.ones(2, np.float32)))
    with pytest.raises(DivergedError, match=r"^round 1: the clients' training loss is not finite \(inf\)"):
        check_round(1, math.inf, None)


def test_a_client_without_training_nodes_does_not_make_the_round_diverge():
    from flwr.app import MetricRecord

    from stamen.contract import protocol as p
    from stamen.server.rows import training_figures

    seconds = {key: 0.0 for key in (p.SETUP_SECONDS, p.TRAIN_SECONDS, p.EVAL_SECONDS, p.PACK_SECONDS)}
    metrics = [
        MetricRecord({p.NUM_EXAMPLES: 30, p.TRAIN_LOSS: 0.5, **seconds}),
        MetricRecord({p.NUM_EXAMPLES: 0, p.TRAIN_LOSS: math.nan, **seconds}),  # the mean loss of no nodes
    ]
    loss = training_figures(metrics)["train_loss"]
    assert loss == 0.5
    check_round(1, loss, None)
