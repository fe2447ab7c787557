"""A dataset plug-in registered from Python (examples/10_own_dataset.py, the form ``edges:STEM``): a run-config
choice, read from files written here, trained on in process, weighed by the size pre-flight, and refused in one
line where the engine or the run does not admit it."""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path

import pytest
import torch

import stamen
from stamen.cli.commands.config import describe
from stamen.common.registry import PYTHON, check_engine
from stamen.contract.plugins import plugin_choices
from stamen.contract.run_config import KEYS, RunConfig
from stamen.graphs import build_federation, load_dataset, names
from stamen.graphs.names import DATASET_SPECS, accepted_datasets, dataset_problem, is_graph_set
from stamen.simulations.size_check import estimate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def edges(registries):
    """The example's module (imported, not run as a script), its dataset form registered from Python."""
    module = types.ModuleType("stamen_example_edges")
    module.__dict__.update(runpy.run_path(str(EXAMPLES / "10_own_dataset.py"), run_name="stamen_example_edges"))
    sys.modules["stamen_example_edges"] = module
    stamen.register_dataset(module.DATASET)
    yield module
    del sys.modules["stamen_example_edges"]


def _write(root: Path) -> None:
    """A 5-node graph of 3 classes with 2 features: a path 0-1-2-3 and node 4 alone; a self-loop and a repeat."""
    (root / "edges").mkdir(parents=True)
    (root / "edges" / "tiny.edges").write_text("0 1\n1 2\n2 3\n3 3\n1 0\n")
    (root / "edges" / "tiny.nodes").write_text("0,1,0\n0,1,0.5\n1,0,1\n2,0.5,0.5\n1,0,2\n")


def test_a_registered_form_is_a_choice_and_its_check_refuses_in_one_line(edges):
    assert "edges:" in DATASET_SPECS and DATASET_SPECS.origin("edges:") == PYTHON
    assert "edges:STEM" in names.DATASET_FORMS and "edges:STEM" in accepted_datasets()
    assert "edges:STEM" in KEYS["dataset"].accepted()  # stamen config's words, read live
    shown = describe(KEYS["dataset"]).splitlines()
    assert shown[-1].split()[0] == "edges:STEM" and "a graph in two text files" in shown[-1]
    assert shown[-1].endswith("(a plug-in: python)") and any(line.split()[0] == "tu:NAME" for line in shown[5:])
    assert RunConfig.from_flower({"dataset": "edges:tiny"}).dataset == "edges:tiny" and not is_graph_set("edges:t")
    with pytest.raises(ValueError, match="^dataset 'edges:../x': edges:STEM takes a file stem") as error:
        RunConfig.from_flower({"dataset": "edges:../x"})
    assert "\n" not in str(error.value)
    assert dataset_problem("edge:x") == (
        "unknown dataset form 'edge:' in 'edge:x'; the forms are npz:STEM, pyg:CLASS/NAME, ogb:ogbn-NAME, tu:NAME, "
        "edges:STEM"
    )


def test_its_reader_gives_the_graph_stamen_makes_canonical(edges, tmp_path):
    _write(tmp_path)
    data = load_dataset("edges:tiny", root=tmp_path)
    assert data.num_nodes == 5 and data.num_classes == 3 and data.x.shape == (5, 2) and data.name == "edges:tiny"
    assert data.y.tolist() == [0, 0, 1, 2, 1]
    # undirected, the self-loop and the repeat dropped: 0-1, 1-2, 2-3 both ways
    assert data.edge_index.tolist() == [[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]]
    with pytest.raises(ValueError, match="takes no generator options"):
        load_dataset("edges:tiny", root=tmp_path, csbm_nodes=3)
    with pytest.raises(FileNotFoundError, match="^dataset 'edges:gone': place gone.edges under"):
        load_dataset("edges:gone", root=tmp_path)
    with pytest.raises(ValueError, match="is a set of small graphs"):
        load_dataset("tu:MUTAG", root=tmp_path)


def test_a_run_in_process_trains_on_it_and_the_pre_flight_weighs_its_files(edges, tmp_path):
    edges.write_graph(tmp_path / "data", "communities", nodes_per_class=30, classes=4)
    config = {"dataset": "edges:communities", "data-root": str(tmp_path / "data"), "num-server-rounds": 2}
    run = stamen.run(config, clients=3, out=tmp_path / "runs", run_name="e")
    assert run.status == stamen.RunStatus.FINISHED and run.summary["dataset"] == "edges:communities"
    assert len(run.rows) == 3 and all(0.0 <= row["global_test_acc"] <= 1.0 for row in run.rows)
    federation = build_federation(RunConfig.from_flower(run.config).federation(3))  # the run's clients
    assert federation.graph.num_nodes == 120 and int(federation.graph.num_classes) == 4
    assert sorted(torch.cat([torch.as_tensor(part) for part in federation.parts]).tolist()) == list(range(120))
    train = sum(int(client.train_mask.sum()) for client in federation.clients)
    assert sum(c["train_nodes"] for c in run.rows[-1]["per_client"].values()) == train
    size = sum(path.stat().st_size for path in (tmp_path / "data" / "edges").iterdir())
    assert (2 * size, "a smaller dataset") in estimate(RunConfig.from_flower(run.config))


def test_a_python_only_dataset_is_refused_on_the_other_engines_in_one_line(edges):
    config = RunConfig.from_flower({"dataset": "edges:tiny"})
    for engine in ("flower", "deployment"):
        with pytest.raises(ValueError, match="^dataset='edges:' is registered in this process only") as error:
            check_engine(plugin_choices(config), engine)
        assert "\n" not in str(error.value) and "stamen.datasets" in str(error.value)
    built_in = RunConfig.from_flower({"dataset": "tu:MUTAG", "task": "graph-classification"})
    check_engine(plugin_choices(built_in), "flower")  # Stamen's own form: from its entry points
    check_engine(plugin_choices(config), "inprocess")


def test_a_spec_that_cannot_be_one_is_refused_in_one_line(registries):
    def spec(name: str, **fields: str) -> stamen.DatasetSpec:
        return stamen.DatasetSpec(name, "h", **{"reader": "m:read", **fields})

    cases = [
        (spec("a/b"), "dataset name 'a/b' must be letters"),
        (spec("x:", check="m:c"), "dataset form 'x:' needs a parameter"),
        (spec("x", parameter="P"), "dataset 'x' is a fixed name"),
        (spec("x", reader="read"), "dataset 'x': reader must name module:function"),
        (spec("x:", parameter="P", check="m:c", files="f"), "dataset 'x:': files must name module:function"),
        (spec("cora"), "dataset 'cora' is already registered (from stamen)"),
        ("cora", "a dataset plug-in is a stamen.DatasetSpec, got str"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
            stamen.register_dataset(bad)  # type: ignore[arg-type]
