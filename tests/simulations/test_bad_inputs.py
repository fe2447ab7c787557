"""Inputs that libraries would choke on are refused by ``stamen run`` before anything is written: exit 2, one
line on stderr naming the problem and what to do, no run folder."""

from pathlib import Path

import pytest

from stamen.cli.main import main as stamen
from stamen.contract.run_config import KEYS, RunConfig
from stamen.simulations import size_check


def refused(capsys: pytest.CaptureFixture, tmp_path: Path, *items: str, clients: int = 2) -> str:
    """Run ``stamen run`` in process on ``clients`` clients with ``items`` as ``-c``; assert the refusal and
    return its one line."""
    out = tmp_path / "runs"
    code = stamen(
        [
            "run",
            "--engine",
            "inprocess",
            "--quiet",
            "--clients",
            str(clients),
            "-c",
            f"num-server-rounds=1 csbm-nodes=60 output-dir='{out}' run-name='r'",
            *[word for item in items for word in ("-c", item)],
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert not out.exists()  # no run folder, not even the output folder
    return err.strip().removeprefix("stamen run: error: ")


@pytest.mark.parametrize(
    ("item", "line"),
    [
        ("seed=-1", "seed must lie in [0, 4294967296), got -1"),
        ("seed=4294967296", "seed must lie in [0, 4294967296), got 4294967296"),
        ("seed=1180591620717411303424", "seed must lie in [0, 4294967296), got 1180591620717411303424"),
        ("num-server-rounds=100000000", "num-server-rounds must lie in [1, 10000000], got 100000000"),
        (
            "hidden=9223372036854775808",
            "hidden must be a 64-bit integer (below 2**63 in size), got 9223372036854775808",
        ),
        ("local-epochs=-9223372036854775809", "local-epochs must be >= 1, got -9223372036854775809"),
    ],
)
def test_numbers_beyond_what_the_libraries_take_are_refused(item, line, capsys, tmp_path):
    assert refused(capsys, tmp_path, item) == line


def test_the_seed_and_rounds_caps_are_in_their_help():
    assert "2**32 - 1" in KEYS["seed"].help
    assert "at most 10,000,000" in KEYS["num-server-rounds"].help


def test_a_graph_too_big_for_this_machine_is_refused_with_the_figures(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(size_check, "available_memory", lambda: 23 * 2**30)
    line = refused(capsys, tmp_path, "csbm-nodes=1000000000000")
    assert line == (
        "run needs about 822.2 TiB of memory; this machine has 23.0 GiB available; use fewer csbm-nodes or a smaller "
        "hidden (or size-check=false to go on anyway)"
    )


def test_a_model_too_big_names_hidden(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(size_check, "available_memory", lambda: 23 * 2**30)
    line = refused(capsys, tmp_path, "hidden=100000000")
    assert line.startswith("run needs about 142.1 PiB of memory; this machine has 23.0 GiB available; ")
    assert line.endswith("use a smaller hidden (or size-check=false to go on anyway)")


def test_the_estimate_counts_a_datasets_files(tmp_path):
    (tmp_path / "npz").mkdir()
    (tmp_path / "npz" / "big.npz").write_bytes(b"\0" * 1000)
    (tmp_path / "npz" / "other.npz").write_bytes(b"\0" * 5000)  # another dataset's file: not counted
    config = RunConfig(dataset="npz:big", data_root=str(tmp_path), hidden=1, num_layers=1)
    assert sum(size for size, _ in size_check.estimate(config)) == 2 * 1000 + 4 * 4


def test_size_check_false_goes_on_and_is_reachable_from_the_api(tmp_path, monkeypatch):
    import stamen as api

    monkeypatch.setattr(size_check, "available_memory", lambda: 1000)
    small = {"csbm-nodes": 60, "num-server-rounds": 1}
    with pytest.raises(ValueError, match=r"^run needs about .* this machine has 1000 bytes available; "):
        api.run(small, clients=2, out=tmp_path / "refused")
    assert not (tmp_path / "refused").exists()
    run = api.run(small, clients=2, out=tmp_path / "runs", size_check=False)
    assert run.status is api.RunStatus.FINISHED


def test_link_prediction_without_edges_to_train_on_is_refused(capsys, tmp_path):
    line = refused(capsys, tmp_path, "task='link-prediction' csbm-degree=0.05")
    assert line == (
        "client 0 has no edges to train link prediction on (0 edges, link-val-frac=0.05, link-test-frac=0.1); "
        "use fewer clients, a graph with more edges or lower link-val-frac and link-test-frac"
    )


def test_a_graph_set_of_one_class_is_refused(capsys, tmp_path):
    from tests.graphs.test_tu_folder import write_tu

    def one_class(files: dict[str, str]) -> None:
        files["graph_labels"] = "\n".join(["3"] * 6)

    root = write_tu(tmp_path / "data", edit=one_class)
    line = refused(
        capsys, tmp_path, f"task='graph-classification' partitioner='random' dataset='tu:TINY' data-root='{root}'"
    )
    assert line == (
        "dataset 'tu:TINY' has 1 class of graph-classification; classification needs at least two: "
        "give a dataset with two classes or more"
    )


GRAPHS = "task='graph-classification' dataset='graphs-synth' partitioner='random'"  # 400 graphs, dealt evenly


def test_a_client_with_one_graph_and_none_to_train_on_is_refused(capsys, tmp_path):
    # 400 graphs over 250 clients: clients 0-149 get two (one to train), clients 150-249 one (none to train)
    line = refused(capsys, tmp_path, GRAPHS, clients=250)
    assert line == (
        "client 150 has no graphs to train graph classification on (1 graph, train-frac=0.6, 250 clients); "
        "use fewer clients, another partitioner or a dataset with more graphs"
    )


def test_clients_whose_graphs_all_go_to_validation_and_test_are_refused(capsys, tmp_path):
    # two graphs each at train-frac 0.4: 0.8 of a graph rounds down to none
    line = refused(capsys, tmp_path, GRAPHS, "train-frac=0.4", clients=200)
    assert line == (
        "client 0 has no graphs to train graph classification on (2 graphs, train-frac=0.4, 200 clients); "
        "use fewer clients, another partitioner or a dataset with more graphs"
    )


def test_graph_classification_with_a_training_graph_in_every_client_is_not_refused(tmp_path):
    import stamen as api

    run = api.run(
        {"task": "graph-classification", "dataset": "graphs-synth", "partitioner": "random"},
        clients=150,
        out=tmp_path / "runs",
        num_server_rounds=1,
    )
    assert run.status is api.RunStatus.FINISHED
