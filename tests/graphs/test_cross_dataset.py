"""The cross-dataset split: client i holds dataset i mod D, each dataset's graphs split at random among its
clients; node features zero-padded to the widest dataset (each keeps its own columns as the prefix), labels
kept; a list goes with partitioner='cross-dataset' only and needs as many clients as datasets; a run of four
clients over two datasets trains with FedAvg and FedStar and reports which dataset each client held."""

import json

import numpy as np
import pytest
import torch

import stamen
from stamen.cli.main import main as stamen_cli
from stamen.contract.run_config import RunConfig
from stamen.graphs import FederationSpec, build_federation
from stamen.graphs.graph_set_clients import load_graph_set
from stamen.graphs.graph_sets import MAX_DEGREE, NUM_FEATURES
from stamen.graphs.names import client_datasets
from tests.graphs.test_tu_folder import write_tu

# graphs-synth (400 graphs, 16 columns, 2 classes), TINY (6 graphs, 2 attributes + 2 node-label columns,
# 2 classes), BARE (6 graphs without node features: the degree one-hot, 10 columns)
LIST = "graphs-synth+tu:TINY+tu:BARE"
WIDTHS = {"graphs-synth": NUM_FEATURES, "tu:TINY": 4, "tu:BARE": MAX_DEGREE + 1}


@pytest.fixture
def root(tmp_path):
    write_tu(tmp_path, "TINY")
    return write_tu(tmp_path, "BARE", labels=False, attributes=False)


def _spec(root, clients: int, dataset: str = LIST, seed: int = 4) -> FederationSpec:
    return FederationSpec(
        dataset=dataset, num_clients=clients, partitioner="cross-dataset", seed=seed, data_root=str(root)
    )


def test_client_i_holds_dataset_i_mod_d_split_at_random_among_its_clients(root):
    federation = build_federation(_spec(root, 5))
    sizes = {"graphs-synth": 400, "tu:TINY": 6, "tu:BARE": 6}
    offsets = {"graphs-synth": 0, "tu:TINY": 400, "tu:BARE": 406}  # the whole graph: the datasets in list order
    held = client_datasets(LIST, 5)
    assert held == ["graphs-synth", "tu:TINY", "tu:BARE", "graphs-synth", "tu:TINY"]
    for name, size in sizes.items():
        parts = [part for part, holder in zip(federation.parts, held, strict=True) if holder == name]
        ids = np.sort(np.concatenate(parts)) - offsets[name]
        assert np.array_equal(ids, np.arange(size)), name  # every graph of the dataset, to its own clients only
        assert max(p.size for p in parts) - min(p.size for p in parts) <= 1  # dealt evenly
    first, second = federation.parts[0], federation.parts[3]
    assert not np.array_equal(first, np.arange(200))  # at random, not in file order
    again = build_federation.__wrapped__(_spec(root, 5))  # the same seed: the same deal
    assert all(np.array_equal(a, b) for a, b in zip(federation.parts, again.parts, strict=True))
    other = build_federation.__wrapped__(_spec(root, 5, seed=5))
    assert not np.array_equal(other.parts[0], first) and first.size + second.size == 400


def test_padding_keeps_each_datasets_features_as_the_prefix_and_its_own_labels(root):
    federation = build_federation(_spec(root, 3))
    width = max(WIDTHS.values())
    assert federation.graph.num_classes == 2 and federation.graph.x.size(1) == width
    for client, part, name in zip(federation.clients, federation.parts, client_datasets(LIST, 3), strict=True):
        own = load_graph_set(name, str(root), seed=4)
        offset = {"graphs-synth": 0, "tu:TINY": 400, "tu:BARE": 406}[name]
        originals = [own[int(g) - offset] for g in part]
        x = torch.cat([g.x for g in originals])
        assert x.size(1) == WIDTHS[name] and client.x.size(1) == width
        assert torch.equal(client.x[:, : WIDTHS[name]], x)  # its own columns, unchanged, first
        assert not client.x[:, WIDTHS[name] :].any()  # zeros after them
        assert torch.equal(client.y, torch.cat([g.y for g in originals]))  # labels not offset
        assert torch.equal(client.edge_index, torch.cat([g.edge_index + n for g, n in _starts(originals)], dim=1))


def _starts(graphs):
    start = 0
    for graph in graphs:
        yield graph, start
        start += graph.num_nodes


GRAPH_TASK = {"task": "graph-classification", "model": "gin"}


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"dataset": "graphs-synth+cora", "partitioner": "cross-dataset"}, r"part 2 \('cora'\) is one graph"),
        ({"dataset": "graphs-synth+tu:a/b", "partitioner": "cross-dataset"}, r"part 2 \('tu:a/b'\): .*no folder"),
        ({"dataset": LIST, "partitioner": "random"}, "only partitioner='cross-dataset' deals out"),
        ({"dataset": "graphs-synth", "partitioner": "cross-dataset"}, "needs a list of graph sets"),
    ],
)
def test_a_list_and_cross_dataset_go_together_and_a_part_that_is_one_graph_is_named(values, says):
    with pytest.raises(ValueError, match=says):
        RunConfig.from_flower({**GRAPH_TASK, **values})


def test_fewer_clients_than_datasets_is_one_line_exit_2_before_any_run(root, tmp_path, capsys):
    out = tmp_path / "runs"
    code = stamen_cli(
        ["run", "--engine", "inprocess", "--clients", "2", "-c", f"output-dir='{out}'",
         "-c", "task='graph-classification'", "-c", f"dataset='{LIST}'", "-c", "partitioner='cross-dataset'",
         "-c", f"data-root='{root}'"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "needs at least 3 clients, got 2" in err
    assert not out.exists() or not any(out.iterdir())  # nothing was started


@pytest.mark.parametrize("algorithm", ["fedavg", "fedstar"])
def test_four_clients_on_two_datasets_train_and_report_each_clients_dataset(tmp_path, algorithm):
    root = write_tu(tmp_path, "TINY")
    run = stamen.run(
        {**GRAPH_TASK, "dataset": "graphs-synth+tu:TINY", "partitioner": "cross-dataset", "data-root": str(root),
         "algorithm": algorithm, "num-server-rounds": 2, "local-epochs": 1},
        clients=4, out=tmp_path / "runs",
    )  # fmt: skip
    assert run.summary["client_datasets"] == {"0": "graphs-synth", "1": "tu:TINY", "2": "graphs-synth", "3": "tu:TINY"}
    last = run.rows[-1]["per_client"]
    assert sorted(last) == ["0", "1", "2", "3"] and not run.degraded
    assert all(0.0 <= last[pid]["test_acc"] <= 1.0 for pid in last)
    assert [last[pid]["train_nodes"] for pid in ("0", "1", "2", "3")] == [120, 1, 120, 1]  # graphs: 60% of 200, 3
    stored = json.loads((run.dir / "summary.json").read_text())
    assert stored["client_datasets"] == run.summary["client_datasets"]
