"""Graph FL algorithms (FedSage with local NeighGen, FED-PUB, FedGTA): they learn in process, and their mechanisms."""

import math

import numpy as np
import pytest
import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict

from stamen.algorithms.fedgta.server import topology_weights
from stamen.algorithms.fedpub import messages as wire
from stamen.algorithms.fedpub.server import FedPub
from stamen.algorithms.fedsage.model import Impaired, NeighGen, generated_neighbours, mend, train_neighgen
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.simulations.inprocess import run_in_process, task_identity

RUN = {"num-server-rounds": 5, "csbm-nodes": 600, "local-epochs": 2, "min-clients": 2}


def _rows(algorithm: str, **values) -> list[dict]:
    config = RunConfig.from_flower({**RUN, "algorithm": algorithm, **values})
    rows: list[dict] = []
    with task_identity():
        run_in_process(config, 3, rows.append)
    return rows


@pytest.mark.parametrize(
    "algorithm, values",
    [("fedsage-local", {"model": "sage", "fedsage-gen-epochs": 30}), ("fedpub", {}), ("fedgta", {})],
)
def test_graph_fl_algorithms_learn(algorithm, values):
    rows = _rows(algorithm, **values)
    assert [row["round"] for row in rows] == [0, 1, 2, 3, 4, 5]
    # the model each client receives (its personalised aggregate for fedpub and fedgta) learns
    assert rows[-1]["global_test_acc"] > rows[0]["global_test_acc"] + 0.15
    assert rows[-1]["test_acc"] > 0.6


def test_mend_attaches_each_generated_row_to_its_node():
    x = torch.arange(6, dtype=torch.float32).view(3, 2)
    edges = torch.tensor([[0, 1], [1, 0]])
    rows = torch.tensor([[100.0, 101.0], [102.0, 103.0], [108.0, 109.0]])
    mended_x, mended_edges = mend(x, edges, rows, torch.tensor([0, 0, 2]))
    assert torch.equal(mended_x[:3], x)
    assert torch.equal(mended_x[3:], rows)
    assert torch.equal(mended_edges[:, :2], edges)
    pairs = {tuple(pair) for pair in mended_edges[:, 2:].t().tolist()}
    assert pairs == {(0, 3), (3, 0), (0, 4), (4, 0), (2, 5), (5, 2)}


def test_the_generated_neighbours_are_the_full_forward_passs_rounded_and_clipped_slots():
    torch.manual_seed(0)
    generator = NeighGen(12, hidden=8, max_pred=3).eval()
    x, edges = torch.rand(20, 12), torch.randint(0, 20, (2, 60))
    with torch.no_grad():  # the degree head set so that the counts spread from below 0 to above max_pred
        scores = generator.encode(x, edges) @ generator.degree_head.weight[0]
        generator.degree_head.weight *= 3.0 / scores.std()
        generator.degree_head.bias.fill_(1.5 - float((scores * 3.0 / scores.std()).median()))
    rows, anchors = generated_neighbours(generator, x, edges)
    with torch.no_grad():
        counts, features = generator(x, edges)
    k = counts.round().clamp(0, 3).long()
    assert 0 < int(k.sum()) < 60 and int((k == 3).sum()) > 0  # some nodes have none, some every slot
    chosen = torch.arange(3).unsqueeze(0) < k.unsqueeze(1)
    assert torch.equal(anchors, chosen.nonzero()[:, 0])  # grouped by node, slots in order
    assert torch.allclose(rows, features[chosen], rtol=1e-5, atol=1e-6)


def _degree_skewed_graph(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Half the nodes expect degree 2, half 24 (Chung-Lu), so how many neighbours a node loses varies with it."""
    rng = np.random.default_rng(seed)
    weight = np.where(np.arange(n) % 2 == 0, 2.0, 24.0)
    prob = np.minimum(np.outer(weight, weight) / weight.sum(), 1.0)
    upper = np.triu(rng.random((n, n)) < prob, k=1)
    source, target = np.nonzero(upper)
    edges = torch.tensor(np.concatenate([[source, target], [target, source]], axis=1), dtype=torch.long)
    return torch.tensor(rng.standard_normal((n, 8)), dtype=torch.float32), edges


def test_the_degree_head_learns_hidden_degrees_better_than_a_constant():
    torch.manual_seed(0)
    x, edges = _degree_skewed_graph(300, seed=1)
    train = Impaired(x, edges, 0.5, 5, torch.Generator().manual_seed(0))
    generator = NeighGen(8, hidden=32, max_pred=5)
    train_neighgen(generator, x, edges, train, epochs=150, lr=0.01)
    fresh = Impaired(x, edges, 0.5, 5, torch.Generator().manual_seed(1))  # other hidden nodes
    with torch.no_grad():
        predicted, generated = generator(x[fresh.kept], fresh.edge_index)
    constant = train.missing.mean()  # the best constant under squared error on the training draw
    error = (predicted - fresh.missing).abs().mean()
    assert error < 0.6 * (constant - fresh.missing).abs().mean()
    assert generated.shape == (fresh.kept.numel(), 5, 8)


def _reply(message: Message, theta: np.ndarray, upload: str, arrays: dict) -> Message:
    content = RecordDict(
        {
            p.ARRAYS: ArrayRecord({"w": Array(theta.astype(np.float32))}),
            upload: ArrayRecord({k: Array(np.asarray(v, dtype=np.float32)) for k, v in arrays.items()}),
            p.METRICS: MetricRecord({p.NUM_EXAMPLES: 10}),
        }
    )
    return Message(content=content, reply_to=message)


class _Grid:
    def get_node_ids(self) -> list[int]:
        return [100, 101, 102]


def test_fedpub_sends_each_client_its_softmax_similarity_average():
    tau = 3.0
    embeddings = [np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([-1.0, 0.5])]
    thetas = [np.array([1.0, 2.0]), np.array([10.0, 0.0]), np.array([0.0, -4.0])]
    strategy = FedPub(tau=tau, min_available_nodes=3, min_train_nodes=3, weighted_by_key=p.NUM_EXAMPLES)
    with task_identity():
        sent = list(strategy.configure_train(1, ArrayRecord(), ConfigRecord(), _Grid()))
        uploads = [{wire.FUNCTIONAL_EMBEDDING: embeddings[m.metadata.dst_node_id - 100]} for m in sent]
        replies = [
            _reply(m, thetas[m.metadata.dst_node_id - 100], wire.FEDPUB_UPLOAD, u) for m, u in zip(sent, uploads)
        ]
        strategy.aggregate_train(1, replies)
        personal = list(strategy.configure_train(2, ArrayRecord(), ConfigRecord(), _Grid()))
    assert sorted(m.metadata.dst_node_id for m in personal) == [100, 101, 102]
    for message in personal:
        i = message.metadata.dst_node_id - 100
        cos = [float(embeddings[i] @ e / (np.linalg.norm(embeddings[i]) * np.linalg.norm(e))) for e in embeddings]
        weights = [math.exp(tau * c) for c in cos]
        expected = sum(w * t for w, t in zip(weights, thetas)) / sum(weights)
        np.testing.assert_allclose(message.content[p.ARRAYS]["w"].numpy(), expected, rtol=1e-5)
    assert not np.allclose(strategy.last_mixing[0], strategy.last_mixing[1])  # personalised, not one average


def test_fedgta_weights_are_confidences_over_clients_with_similar_moments():
    moments = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    confidences = np.array([2.0, 6.0, 5.0, 0.0])
    weights = topology_weights(moments, confidences, accept=0.5)
    # clients 0 and 1 accept each other (cosine 0.99); 2 only itself; 3 only itself with zero confidence
    np.testing.assert_allclose(weights[0], [2 / 8, 6 / 8, 0, 0])
    np.testing.assert_allclose(weights[1], [2 / 8, 6 / 8, 0, 0])
    np.testing.assert_allclose(weights[2], [0, 0, 1, 0])
    np.testing.assert_allclose(weights[3], [0, 0, 0, 1])
    everyone = topology_weights(moments, confidences, accept=-1.0)  # cosines are >= 0 here: all accepted
    np.testing.assert_allclose(everyone, np.tile(confidences / confidences.sum(), (4, 1)))
