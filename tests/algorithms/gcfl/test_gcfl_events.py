"""GCFL in the run's records: before any split it is FedAvg to the bit, and every split is written down.

Runs of four clients of graphs-synth, in process. With ``gcfl-eps1=0`` (no mean update norm is below
it) no cluster ever splits, and GCFL's one cluster must train exactly as FedAvg does: the same rows
and the same final weights. With ``gcfl-eps1`` large, ``gcfl-eps2=0`` and no warm-up, the one
cluster splits in round 2, the first round with updates (round 1's clients start from the seeded
model): the split is in that round's row, in ``summary.json`` and in ``run.log``. The norms a split
records are checked against the clients' updates computed here from the replies, and the cut
against networkx's Stoer-Wagner minimum cut.
"""

import json

import numpy as np
import pytest
import torch
from flwr.app import ArrayRecord, Message

import stamen
from stamen.contract import protocol as p
from stamen.contract.figures import CLUSTER_SPLITS, CLUSTERS, ROW_TIMINGS
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import run_rounds
from stamen.simulations.inprocess import InProcessGrid, task_identity
from stamen.simulations.progress import clusters_text

CLIENTS = 4
RUN = {"task": "graph-classification", "dataset": "graphs-synth", "partitioner": "random", "seed": 0,
       "num-server-rounds": 3}  # fmt: skip
NEVER_SPLITS = {"gcfl-eps1": 0.0, "gcfl-eps2": 0.0, "gcfl-warmup-rounds": 0}
SPLITS_EARLY = {"gcfl-eps1": 1e9, "gcfl-eps2": 0.0, "gcfl-warmup-rounds": 0}
GCFL_ONLY = {CLUSTERS, CLUSTER_SPLITS, "client_processes", *ROW_TIMINGS}  # and wall times, memory


def _run(tmp_path, name: str, **values):
    return stamen.run({**RUN, **values}, clients=CLIENTS, out=tmp_path, run_name=name)


def _figures(row: dict) -> dict:
    return {key: value for key, value in row.items() if key not in GCFL_ONLY}


def test_gcfl_that_never_splits_is_fedavg_to_the_bit(tmp_path):
    fedavg = _run(tmp_path, "fedavg", algorithm="fedavg")
    gcfl = _run(tmp_path, "gcfl", algorithm="gcfl", **NEVER_SPLITS)
    assert [row["round"] for row in gcfl.rows] == [0, 1, 2, 3]
    assert [_figures(row) for row in gcfl.rows] == [_figures(row) for row in fedavg.rows]
    assert all(row[CLUSTERS] == [[0, 1, 2, 3]] and CLUSTER_SPLITS not in row for row in gcfl.rows[1:])
    assert not any(CLUSTERS in row or CLUSTER_SPLITS in row for row in fedavg.rows)
    assert CLUSTERS not in fedavg.summary and gcfl.summary[CLUSTERS] == [[0, 1, 2, 3]]
    assert gcfl.summary[CLUSTER_SPLITS] == []
    assert gcfl.summary["notes"] == [
        "gcfl never split its one cluster: every round's aggregate was fedavg's (a higher gcfl-eps1 or a lower "
        "gcfl-eps2 lets it split)"
    ]
    assert "notes" not in fedavg.summary
    weights = [torch.load(run.dir / "model.pt", weights_only=True)["state_dict"] for run in (fedavg, gcfl)]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][name], weights[1][name]) for name in weights[0])


def test_a_split_is_in_its_rows_summary_and_run_log(tmp_path):
    run = _run(tmp_path, "split", algorithm="gcfl", **SPLITS_EARLY)
    rows = [json.loads(line) for line in (run.dir / "metrics.jsonl").read_text().splitlines()]
    assert rows == run.rows and [row["round"] for row in rows] == [0, 1, 2, 3]
    assert rows[1][CLUSTERS] == [[0, 1, 2, 3]] and CLUSTER_SPLITS not in rows[1]  # round 1: no updates yet
    (split,) = rows[2][CLUSTER_SPLITS]
    assert split["round"] == 2 and split["cluster"] == [0, 1, 2, 3]
    assert "notes" not in run.summary  # it split: not fedavg
    first, second = split["parts"]
    assert first and second and sorted(first + second) == [0, 1, 2, 3] and 0 in first
    assert split["eps1"] == 1e9 and split["eps2"] == 0.0
    assert 0 < split["mean_update_norm"] < split["max_update_norm"] == max(split["update_norms"].values())
    assert set(split["update_norms"]) == {"0", "1", "2", "3"} and split["cut_weight"] >= 0
    assert "norm_sequences" not in split and "dtw_distances" not in split  # plain GCFL
    assert rows[2][CLUSTERS] == [first, second]
    events = [event for row in rows for event in row.get(CLUSTER_SPLITS, [])]
    summary = json.loads((run.dir / "summary.json").read_text())
    assert summary[CLUSTERS] == rows[-1][CLUSTERS] and summary[CLUSTER_SPLITS] == events
    assert sorted(i for cluster in summary[CLUSTERS] for i in cluster) == [0, 1, 2, 3]
    log = (run.dir / "run.log").read_text()
    line = f"gcfl: round 2 split clients [0, 1, 2, 3] into {first} and {second} (mean update norm "
    assert log.count(line) == 1, log
    assert "> eps2 0;" in log.split(line)[1].splitlines()[0]
    assert clusters_text(rows).startswith(f", {len(rows[-1][CLUSTERS])} clusters (split in round ")
    assert clusters_text(rows[:2]) == ", 1 cluster" and clusters_text([{"round": 1}]) == ""


class Recorded:
    """An in-process GCFL run through the round loop, with the weights sent and the replies of each round."""

    def __init__(self, **values) -> None:
        config = RunConfig.from_flower({**RUN, "algorithm": "gcfl", **values})
        self.strategy = server_algorithm("gcfl").make_strategy(config)
        self.rows: list[dict] = []
        self.replies: dict[int, list[Message]] = {}
        grid = InProcessGrid(config, CLIENTS)

        def on_replies(server_round: int, sent: ArrayRecord, replies: list[Message]) -> None:
            self.replies[server_round] = replies

        with task_identity():
            run_rounds(grid, self.strategy, config.num_server_rounds, True, CLIENTS, 60.0, self.rows.append,
                       on_replies=on_replies)  # fmt: skip

    def updates(self, server_round: int, sent: dict[int, ArrayRecord], prefix: str = "") -> dict[int, np.ndarray]:
        """Each client's update of ``server_round`` from the weights ``sent`` to it (by partition), flattened: of
        the weights whose names start with ``prefix``."""
        updates = {}
        for reply in self.replies[server_round]:
            partition = int(reply.content[p.METRICS][p.PARTITION_ID])
            arrays = reply.content[p.ARRAYS]
            names = [n for n in arrays if n.startswith(prefix)]
            updates[partition] = np.concatenate(
                [arrays[n].numpy().astype(np.float64).ravel() - sent[partition][n].numpy().ravel() for n in names]
            )
        return updates


def _average(replies: list[Message]) -> ArrayRecord:
    """The training-graph-weighted mean of the replies' weights (float64), for the updates' reference point."""
    examples = np.array([float(reply.content[p.METRICS][p.NUM_EXAMPLES]) for reply in replies])
    arrays = [reply.content[p.ARRAYS] for reply in replies]
    return ArrayRecord(
        {
            name: _array(sum(w * a[name].numpy().astype(np.float64) for w, a in zip(examples / examples.sum(), arrays)))
            for name in arrays[0]
        }
    )


def _array(values: np.ndarray):
    from flwr.app import Array

    return Array(values.astype(np.float32))


def test_a_split_records_the_norms_of_the_clients_updates_and_the_least_cut():
    import networkx as nx

    run = Recorded(**SPLITS_EARLY, **{"num-server-rounds": 2})
    sent = _average(run.replies[1])  # round 2's clients all got round 1's average (one cluster)
    updates = run.updates(2, dict.fromkeys(range(CLIENTS), sent))
    (split,) = run.rows[-1][CLUSTER_SPLITS]
    norms = {str(i): float(np.linalg.norm(u)) for i, u in updates.items()}
    assert split["update_norms"].keys() == norms.keys()
    for i, norm in norms.items():
        assert split["update_norms"][i] == pytest.approx(norm, rel=1e-5)
    mean = np.linalg.norm(np.mean([updates[i] for i in range(CLIENTS)], axis=0))
    assert split["mean_update_norm"] == pytest.approx(mean, rel=1e-4)
    assert split["max_update_norm"] == pytest.approx(max(norms.values()), rel=1e-5)
    graph = nx.Graph()  # GCFL's similarity, cos + 1, and its least cut
    for i in range(CLIENTS):
        for j in range(i + 1, CLIENTS):
            cosine = updates[i] @ updates[j] / np.linalg.norm(updates[i]) / np.linalg.norm(updates[j])
            graph.add_edge(i, j, weight=cosine + 1)
    cut, (side, other) = nx.stoer_wagner(graph)
    assert split["cut_weight"] == pytest.approx(cut, rel=1e-5)
    assert sorted(map(sorted, split["parts"])) == sorted([sorted(side), sorted(other)])


def test_measured_on_the_layers_a_split_reads_the_message_passing_layers_updates_only():
    run = Recorded(**SPLITS_EARLY, **{"num-server-rounds": 2, "gcfl-measure": "layers"})
    sent = dict.fromkeys(range(CLIENTS), _average(run.replies[1]))
    names = list(run.replies[2][0].content[p.ARRAYS])
    assert any(n.startswith("layers.") for n in names) and any(not n.startswith("layers.") for n in names)
    layers, whole = run.updates(2, sent, prefix="layers."), run.updates(2, sent)
    (split,) = run.rows[-1][CLUSTER_SPLITS]
    for i in range(CLIENTS):
        assert split["update_norms"][str(i)] == pytest.approx(float(np.linalg.norm(layers[i])), rel=1e-5)
        assert np.linalg.norm(layers[i]) < np.linalg.norm(whole[i]) * (1 - 1e-6)  # the head's update left out
    mean = np.linalg.norm(np.mean([layers[i] for i in range(CLIENTS)], axis=0))
    assert split["mean_update_norm"] == pytest.approx(mean, rel=1e-4)


def _dtw(a: list[float], b: list[float]) -> float:
    cost = {(0, 0): 0.0}
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            before = [cost.get(k, np.inf) for k in ((i - 1, j), (i, j - 1), (i - 1, j - 1))]
            cost[i, j] = (a[i - 1] - b[j - 1]) ** 2 + min(before)
    return float(np.sqrt(cost[len(a), len(b)]))


def test_a_gcfl_plus_split_records_the_norm_sequences_and_their_dtw_distances():
    run = Recorded(**SPLITS_EARLY, **{"gcfl-sequence-length": 2})
    assert CLUSTER_SPLITS not in run.rows[2]  # round 2: one norm per client, the sequences need two
    (split,) = run.rows[3][CLUSTER_SPLITS]
    assert split["round"] == 3 and split["sequence_length"] == 2 and split["cluster"] == [0, 1, 2, 3]
    sequences = split["norm_sequences"]
    assert [sequences[str(i)][-1] for i in range(CLIENTS)] == [split["update_norms"][str(i)] for i in range(CLIENTS)]
    sent = _average(run.replies[1])
    round_2 = run.updates(2, dict.fromkeys(range(CLIENTS), sent))
    for i in range(CLIENTS):
        assert sequences[str(i)][0] == pytest.approx(float(np.linalg.norm(round_2[i])), rel=1e-5)
    distances = np.array(split["dtw_distances"])
    expected = [[_dtw(sequences[str(i)], sequences[str(j)]) for j in range(CLIENTS)] for i in range(CLIENTS)]
    assert np.allclose(distances, expected, rtol=1e-9, atol=0)
