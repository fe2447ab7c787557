"""benchmarks/tools/fedstar_authors.py without the authors' code: the clients it hands over are Stamen's graphs and
splits, its figures pool correct graphs and pick the round as Stamen's summary does, bad arguments exit 2."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from stamen.contract.run_config import RunConfig
from stamen.graphs.federation import build_federation

TOOL = Path(__file__).resolve().parents[2] / "benchmarks" / "tools" / "fedstar_authors.py"
sys.path.insert(0, str(TOOL.parent))  # the tool imports its table module beside it, as a script does


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("fedstar_authors_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pooled_accuracy_counts_every_clients_correct_graphs(tool):
    # 1 of 2 and 4 of 4 correct: 5 of 6, not the mean of 0.5 and 1.0
    assert tool.pooled([0.5, 1.0], [2, 4]) == pytest.approx(5 / 6)


def test_the_best_round_is_the_first_highest_received_validation(tool):
    clients = [{"dataset": "a", "val": [0] * 2, "test": [0] * 2}, {"dataset": "b", "val": [0] * 2, "test": [0] * 4}]
    trace = [
        {"round": 1, "client_val": [1, 1], "client_test": [0, 0], "received_val": [0, 0], "received_test": [0, 0]},
        {
            "round": 2,
            "client_val": [0, 0],
            "client_test": [0.5, 0.25],
            "received_val": [1, 0.5],
            "received_test": [1, 1],
        },
        {"round": 3, "client_val": [0, 0], "client_test": [1, 1], "received_val": [0.5, 1], "received_test": [0, 0]},
    ]
    result = tool.summary(trace, clients)
    assert (result["best_round"], result["selected_on"]) == (2, "received_val")  # round 3 ties it: the first kept
    assert result["best"]["client_test_acc"] == pytest.approx((1 + 1) / 6)
    assert result["best"]["client_test_acc_per_dataset"] == {"a": 0.5, "b": 0.25}
    assert result["final"]["client_test_acc"] == 1.0
    local = tool.summary(
        [{k: v for k, v in row.items() if k.startswith(("round", "client"))} for row in trace], clients
    )
    assert (local["best_round"], local["selected_on"]) == (1, "client_val")  # no received model: the clients'
    assert "received_test_acc" not in local["best"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--authors-code", "{empty}", "--data-root", "{data}", "--out", "{out}"], "lacks lib/client.py"),
        (["--authors-code", "{code}", "--data-root", "{empty}", "--out", "{out}"], "no MUTAG/raw folder"),
        (["--authors-code", "{code}", "--data-root", "{data}", "--out", "{out}", "--seeds", "a"], "integers"),
        (["--authors-code", "{code}", "--data-root", "{data}", "--out", "{out}", "--methods", "gcfl"], "choose from"),
        (["--authors-code", "{code}", "--data-root", "{data}", "--out", "{empty}"], "must be a .json file"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tool, tmp_path, capsys, argv, says):
    code, data, empty = tmp_path / "code", tmp_path / "data", tmp_path / "empty"
    for name in tool.AUTHORS_FILES:
        (code / name).parent.mkdir(parents=True, exist_ok=True)
        (code / name).write_text("")
    for name in ("MUTAG", "PROTEINS"):
        (data / name / "raw").mkdir(parents=True)
    empty.mkdir()
    paths = {"code": code, "data": data, "empty": empty, "out": tmp_path / "out.json"}
    with pytest.raises(SystemExit) as exit_:
        tool.parse([a.format(**paths) for a in argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not (tmp_path / "out.json").exists()


def test_the_clients_are_stamens_graphs_and_splits_with_their_own_feature_columns(tool, shared_datasets):
    clients = tool.stamen_clients(0, str(shared_datasets))
    config = RunConfig.from_mapping(
        {
            "task": "graph-classification", "dataset": tool.DATASET, "partitioner": "cross-dataset", "seed": 0,
            "train-frac": 0.8, "val-frac": 0.1, "data-root": str(shared_datasets),
        }
    )  # fmt: skip
    federation = build_federation(config.federation(3))
    assert [c["dataset"] for c in clients] == ["graphs-synth", "tu:MUTAG", "tu:PROTEINS"]
    assert [c["width"] for c in clients] == [16, 7, 3]  # MUTAG's 7 atom types, PROTEINS' 3 node labels
    for client, batch in zip(clients, federation.clients, strict=True):
        graphs = batch.to_data_list()
        for split, mask in (("train", batch.train_mask), ("val", batch.val_mask), ("test", batch.test_mask)):
            theirs = [g for g, keep in zip(graphs, mask.tolist(), strict=True) if keep]
            assert len(client[split]) == len(theirs) > 0
            for given, stamens in zip(client[split], theirs, strict=True):
                assert torch.equal(given.x, stamens.x[:, : client["width"]])
                assert torch.equal(given.edge_index, stamens.edge_index) and torch.equal(given.y, stamens.y)
