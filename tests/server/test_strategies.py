"""Flower's strategies as algorithms: each learns in process, and each equals its math on hand-made replies."""

import numpy as np
import pytest
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict

from stamen.contract import protocol as p
from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.simulations.inprocess import run_in_process, task_identity

STRATEGIES = ("fedadam", "fedyogi", "fedadagrad", "fedmedian", "fedtrimmedavg", "krum", "multikrum", "bulyan")
# an easy, near-IID task on which every rule, Krum's single pick included, learns in a few rounds
TASK = {
    "csbm-nodes": 600,
    "csbm-signal": 2.0,
    "csbm-classes": 3,
    "partitioner": "label-dirichlet",
    "dirichlet-alpha": 100.0,
    "local-epochs": 3,
    "num-server-rounds": 6,
    "min-clients": 2,
}


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


def _config(algorithm: str, **values) -> RunConfig:
    return RunConfig.from_flower({**TASK, "algorithm": algorithm, **values})


def _rows(config: RunConfig, clients: int) -> list[dict]:
    rows: list[dict] = []
    run_in_process(config, clients, rows.append)
    return rows


@pytest.mark.parametrize("algorithm", STRATEGIES)
def test_each_strategy_learns(algorithm):
    clients = 7 if algorithm == "bulyan" else 5  # Bulyan needs 4f + 3 clients (f = 1 by default)
    rows = _rows(_config(algorithm), clients)
    assert [row["round"] for row in rows] == list(range(7))
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"] + 0.3


def test_specs_privacy_and_resume():
    for name in ("fedadam", "fedyogi", "fedadagrad"):
        assert not ALGORITHMS[name].resumable  # the optimiser's moments are not in the checkpoint
    for name in ("fedmedian", "fedtrimmedavg", "krum", "multikrum", "bulyan"):
        assert ALGORITHMS[name].resumable
    for name in STRATEGIES:
        assert ALGORITHMS[name].privacy == ("none", "dp-sgd")
    with pytest.raises(ValueError, match="privacy='client-dp' adds noise to an aggregate: use algorithm"):
        _config("krum", privacy="client-dp")
    with pytest.raises(ValueError, match="resume-from cannot continue an algorithm='fedyogi' run"):
        _config("fedyogi", **{"resume-from": "runs/x"})


# ----------------------------------------------------------------------------- hand-made replies
def _reply(weights: list[float], examples: int = 1) -> Message:
    content = RecordDict(
        {
            p.ARRAYS: ArrayRecord({"w": Array(np.asarray(weights, dtype=np.float64))}),
            p.METRICS: MetricRecord({p.NUM_EXAMPLES: examples}),
        }
    )
    return Message(content=content, dst_node_id=1, message_type=MessageType.TRAIN)


def _aggregate(algorithm: str, replies: list[list[float]], examples=None, **values) -> np.ndarray:
    strategy = server_algorithm(algorithm).make_strategy(_config(algorithm, **values))
    examples = examples or [1] * len(replies)
    arrays, _ = strategy.aggregate_train(1, [_reply(w, n) for w, n in zip(replies, examples, strict=True)])
    return arrays["w"].numpy()


def test_fedmedian_is_the_coordinate_wise_median():
    replies = [[1.0, 2.0, 10.0], [3.0, 0.0, -5.0], [2.0, 7.0, 1.0]]
    assert _aggregate("fedmedian", replies, examples=[100, 1, 1]).tolist() == [2.0, 2.0, 1.0]


def test_fedtrimmedavg_drops_the_extremes_of_each_coordinate():
    replies = [[0.0, 5.0], [1.0, -100.0], [2.0, 6.0], [3.0, 7.0], [100.0, 8.0]]
    # beta 0.2 of 5 replies: one value dropped at each end, per coordinate
    assert _aggregate("fedtrimmedavg", replies).tolist() == pytest.approx([2.0, 6.0])
    # beta 0.1 of 5 rounds down to none dropped: the plain mean
    assert _aggregate("fedtrimmedavg", replies, **{"trimmed-beta": 0.1}).tolist() == pytest.approx(
        np.mean(replies, axis=0).tolist()
    )


CLUSTER = [[0.0], [0.1], [0.2], [0.35], [10.0]]


def _krum_scores(points: np.ndarray, f: int) -> np.ndarray:
    """Blanchard et al.'s score: squared distances to the n - f - 2 nearest others."""
    d = ((points[:, None, :] - points[None, :, :]) ** 2).sum(-1)
    keep = len(points) - f - 2
    return np.array([np.sort(np.delete(d[i], i))[:keep].sum() for i in range(len(points))])


def test_krum_picks_the_reply_closest_to_its_neighbours():
    scores = _krum_scores(np.asarray(CLUSTER), 1)
    assert int(np.argmin(scores)) == 1  # 0.1: its two nearest are 0.0 and 0.2
    assert _aggregate("krum", CLUSTER, examples=[1, 1, 1, 1, 50]).tolist() == [0.1]


def test_multikrum_averages_all_but_f_by_training_nodes():
    examples = [1, 2, 3, 4, 100]
    best = np.argsort(_krum_scores(np.asarray(CLUSTER), 1))[:4]  # n - f = 4, the outlier left out
    assert sorted(best.tolist()) == [0, 1, 2, 3]
    expected = sum(CLUSTER[i][0] * examples[i] for i in best) / sum(examples[i] for i in best)
    assert _aggregate("multikrum", CLUSTER, examples=examples).tolist() == pytest.approx([expected])
    two = np.argsort(_krum_scores(np.asarray(CLUSTER), 1))[:2]
    expected = sum(CLUSTER[i][0] * examples[i] for i in two) / sum(examples[i] for i in two)
    assert _aggregate("multikrum", CLUSTER, examples=examples, **{"num-nodes-to-select": 2}).tolist() == (
        pytest.approx([expected])
    )


def test_bulyan_selects_by_krum_then_averages_around_the_median():
    rng = np.random.default_rng(0)
    replies = np.concatenate([rng.normal(0, 1, (6, 4)), np.full((1, 4), 50.0)])
    f = 1
    theta, beta = len(replies) - 2 * f, len(replies) - 4 * f
    selected = replies[np.argsort(_krum_scores(replies, f))[:theta]]
    median = np.median(selected, axis=0)
    nearest = np.argsort(np.abs(selected - median), axis=0)[:beta]
    expected = np.take_along_axis(selected, nearest, axis=0).mean(axis=0)
    assert 50.0 not in selected
    assert _aggregate("bulyan", replies.tolist()).tolist() == pytest.approx(expected.tolist())


def test_rules_refuse_too_few_replies_in_one_line():
    with pytest.raises(ValueError, match=r"krum with num-malicious-nodes=1 needs at least 2f\+3 = 5 clients"):
        _aggregate("krum", CLUSTER[:4])
    with pytest.raises(ValueError, match=r"bulyan with num-malicious-nodes=1 needs at least 4f\+3 = 7 clients"):
        _aggregate("bulyan", CLUSTER)
    with pytest.raises(ValueError, match="multikrum selects num-nodes-to-select=6 of 5 replies"):
        _aggregate("multikrum", CLUSTER, **{"num-nodes-to-select": 6})


# ----------------------------------------------------------------------------- the server optimisers
class OneModelGrid:
    """Three nodes; a query for the initial model gets ``initial`` back (as a Stamen client answers)."""

    def __init__(self, initial: np.ndarray) -> None:
        self.initial = initial
        self.queries = 0

    def get_node_ids(self) -> list[int]:
        return [1, 2, 3]

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for message in messages:
            assert message.content[p.CONFIG][p.QUERY] == p.INITIAL_MODEL_QUERY
            self.queries += 1
            message.metadata.__dict__["_message_id"] = "query"
            content = RecordDict({p.ARRAYS: ArrayRecord({"w": Array(self.initial)})})
            replies.append(Message(content=content, reply_to=message))
        return replies


def _optimiser_step(algorithm: str, **values) -> tuple[np.ndarray, np.ndarray, np.ndarray, OneModelGrid]:
    """Round 1 (no weights sent: w0 asked of a client), then round 2 from the round-1 weights."""
    w0 = np.array([0.5, -0.2, 0.0])
    grid = OneModelGrid(w0)
    strategy = server_algorithm(algorithm).make_strategy(_config(algorithm, **values))
    strategy.configure_train(1, ArrayRecord(), ConfigRecord(), grid)
    replies = [[0.7, -0.2, 0.3], [0.5, 0.2, -0.1]]
    w1 = strategy.aggregate_train(1, [_reply(w, n) for w, n in zip(replies, [1, 3], strict=True)])[0]["w"].numpy()
    strategy.configure_train(2, ArrayRecord({"w": Array(w1)}), ConfigRecord(), grid)
    w2 = strategy.aggregate_train(2, [_reply(w) for w in ([0.6, 0.0, 0.1], [0.6, 0.0, 0.1])])[0]["w"].numpy()
    return w0, w1, w2, grid


def test_fedadam_steps_from_the_seeded_initial_model():
    w0, w1, w2, grid = _optimiser_step("fedadam")
    assert grid.queries == 1  # only round 1, which sends no weights, asks for the initial model
    b1, b2, tau, eta = 0.0, 0.99, 0.1, 0.1  # FedAdam's defaults (beta-1 0, FEDOPT_DEFAULTS)
    delta = np.array([0.55, 0.1, 0.0]) - w0  # the mean weighted 1:3
    m, v = (1 - b1) * delta, (1 - b2) * delta**2
    expected = w0 + eta * np.sqrt(1 - b2**2) / (1 - b1**2) * m / (np.sqrt(v) + tau)
    assert w1 == pytest.approx(expected)
    delta = np.array([0.6, 0.0, 0.1]) - w1
    m, v = b1 * m + (1 - b1) * delta, b2 * v + (1 - b2) * delta**2
    assert w2 == pytest.approx(w1 + eta * np.sqrt(1 - b2**3) / (1 - b1**3) * m / (np.sqrt(v) + tau))


def test_fedyogi_and_fedadagrad_follow_their_second_moments():
    w0, w1, w2, _ = _optimiser_step("fedyogi", **{"fedopt-eta": 0.05, "fedopt-beta-1": 0.5})
    delta = np.array([0.55, 0.1, 0.0]) - w0
    m, v = 0.5 * delta, 0.01 * delta**2  # v_1 = v_0 - (1 - b2) delta^2 sign(v_0 - delta^2), v_0 = 0
    assert w1 == pytest.approx(w0 + 0.05 * m / (np.sqrt(v) + 0.1))  # FedYogi's tau 0.1
    delta2 = np.array([0.6, 0.0, 0.1]) - w1
    m, v = 0.5 * m + 0.5 * delta2, v - 0.01 * delta2**2 * np.sign(v - delta2**2)
    assert w2 == pytest.approx(w1 + 0.05 * m / (np.sqrt(v) + 0.1))

    w0, w1, w2, _ = _optimiser_step("fedadagrad", **{"fedopt-tau": 0.01})
    delta = np.array([0.55, 0.1, 0.0]) - w0
    assert w1 == pytest.approx(w0 + 0.1 * delta / (np.sqrt(delta**2) + 0.01))  # beta-1 = 0: m = delta
    delta2 = np.array([0.6, 0.0, 0.1]) - w1
    assert w2 == pytest.approx(w1 + 0.1 * delta2 / (np.sqrt(delta**2 + delta2**2) + 0.01))


def test_federation_check_before_a_run():
    def check_federation(config, num_clients):
        server_algorithm(config.algorithm).check_federation(config, num_clients)

    check_federation(_config("bulyan"), 7)
    check_federation(_config("fedavg", **{"num-malicious-nodes": 5}), 3)  # not a Krum-family rule
    with pytest.raises(ValueError, match=r"bulyan with num-malicious-nodes=1 needs at least 4f\+3 = 7 clients"):
        check_federation(_config("bulyan"), 6)
    with pytest.raises(ValueError, match=r"needs at least 2f\+3 = 5 clients per round, sampled 4"):
        check_federation(_config("krum", **{"fraction-train": 0.4}), 10)  # Flower samples 4 of 10
    with pytest.raises(ValueError, match="multikrum selects num-nodes-to-select=8 of 7 sampled clients"):
        check_federation(_config("multikrum", **{"num-nodes-to-select": 8}), 7)
    with pytest.raises(ValueError, match=r"krum with num-malicious-nodes=2 needs at least 2f\+3 = 7 clients per round"):
        check_federation(_config("krum", **{"num-malicious-nodes": 2}), 6)  # the spec's (2, 3), not bulyan's


@pytest.mark.parametrize("algorithm", ("fedavg", "fedprox", "fedmedian", "fedtrimmedavg", "krum"))
def test_strategies_leave_metric_averaging_to_the_round_loop(algorithm):
    strategy = server_algorithm(algorithm).make_strategy(_config(algorithm))
    replies = [_reply([1.0, 2.0], 2), _reply([3.0, 5.0], 6), _reply([2.0, 2.0], 2), _reply([0.0, 1.0], 2)]
    replies += [_reply([1.0, 1.0], 2)]
    arrays, metrics = strategy.aggregate_train(1, replies)
    assert arrays is not None and len(metrics) == 0  # the loop pools the replies' figures (stamen/server/rows.py)
