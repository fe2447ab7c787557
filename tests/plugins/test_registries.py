"""Algorithm and model plug-ins registered from Python: validation, refusals, engines, and what they compute."""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path

import pytest

import stamen
from stamen.common.registry import PYTHON, check_engine
from stamen.contract.algorithms import ALGORITHMS, plugin_keys
from stamen.contract.keys import ge
from stamen.contract.run_config import RunConfig
from stamen.contract.tasks import TASKS
from stamen.models.names import MODEL_SPECS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def example(registries):
    """The examples' modules (imported, not run as scripts), their algorithm and model registered from Python."""
    for name, file, spec in (
        ("stamen_example_fednag", "06_own_algorithm.py", "ALGORITHM"),
        ("stamen_example_resgcn", "07_own_model.py", "MODEL"),
    ):
        module = types.ModuleType(name)
        module.__dict__.update(runpy.run_path(str(EXAMPLES / file), run_name=name))
        sys.modules[name] = module
        register = stamen.register_algorithm if spec == "ALGORITHM" else stamen.register_model
        register(getattr(module, spec))
    yield
    for name in ("stamen_example_fednag", "stamen_example_resgcn"):
        del sys.modules[name]


def test_a_registered_algorithm_is_a_choice_with_its_own_keys(example):
    assert "fednag" in ALGORITHMS and ALGORITHMS.origin("fednag") == PYTHON
    assert ALGORITHMS["fednag"].options == ("fednag-momentum", "fednag-lr")
    assert {name for name, key in plugin_keys().items() if key.section == "fednag"} == {"fednag-momentum", "fednag-lr"}
    config = RunConfig.from_flower({"algorithm": "fednag", "fednag-momentum": 0.25, "model": "resgcn"})
    assert config.option("fednag-momentum") == 0.25 and config.option("fednag-lr") == 1.0
    assert config.to_flower()["fednag-lr"] == 1.0
    assert "fednag" in TASKS["link-prediction"].algorithms  # any_task: every task takes it
    assert "resgcn" in TASKS["node-classification"].models and "resgcn" not in TASKS["graph-classification"].models


@pytest.mark.parametrize(
    "values,message",
    [
        ({"fednag-momentum": 1.0}, "fednag-momentum must lie in [0, 1), got 1.0"),
        ({"fednag-lr": "x"}, "run-config key 'fednag-lr' must be a number"),
        ({"fednag-lrr": 1.0}, "unknown run-config key 'fednag-lrr' (did you mean 'fednag-lr'?)"),
        ({"algorithm": "fednag", "privacy": "dp-sgd", "model": "sgc"}, "not 'fednag'"),
        ({"task": "graph-classification", "model": "resgcn"}, "cannot train model='resgcn'; use model gcn or gin"),
        ({"model": "resgcn", "privacy": "dp-sgd"}, "model 'resgcn' is not one"),
    ],
)
def test_a_plugin_is_refused_in_one_line_where_its_spec_does_not_admit(example, values, message):
    with pytest.raises(ValueError) as error:
        RunConfig.from_flower(values)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_specs_that_cannot_be_plugins_are_refused(registries):
    spec = stamen.AlgorithmSpec("mine", "mine", "my.server", "stamen.client.local_step")
    with pytest.raises(ValueError, match="already registered"):
        stamen.register_algorithm(stamen.AlgorithmSpec("fedavg", "mine", "my.server", "stamen.client.local_step"))
    with pytest.raises(ValueError, match="is already a run-config key"):
        stamen.register_algorithm(
            stamen.AlgorithmSpec("mine", "m", "my.s", "my.c", keys=(stamen.option("lr", 1.0, "x"),))
        )
    with pytest.raises(ValueError, match="must name a module"):
        stamen.register_algorithm(stamen.AlgorithmSpec("mine", "m", "not a path", "my.c"))
    with pytest.raises(ValueError, match="is a stamen.AlgorithmSpec"):
        stamen.register_algorithm("mine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="its default must be"):
        stamen.option("mine-x", None, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="encoder must name module:function"):
        stamen.register_model(stamen.ModelSpec("mine", "m"))
    assert "mine" not in ALGORITHMS and "mine" not in MODEL_SPECS
    stamen.register_algorithm(spec)
    stamen.register_algorithm(spec)  # the same spec again (a module imported twice) is no clash
    assert ALGORITHMS["mine"] == spec
    keyed = stamen.AlgorithmSpec("other", "o", "my.s", "my.c", keys=(stamen.option("other-k", 1, "k", bound=ge(1)),))
    stamen.register_algorithm(keyed)
    with pytest.raises(ValueError, match="is declared by algorithm 'other'"):
        stamen.register_algorithm(stamen.AlgorithmSpec("third", "t", "my.s", "my.c", keys=keyed.keys))


def test_a_python_only_plugin_is_refused_on_engines_of_other_processes(example):
    check_engine({"algorithm": (ALGORITHMS, "fednag")}, "inprocess")
    check_engine({"algorithm": (ALGORITHMS, "fedavg")}, "flower")
    with pytest.raises(ValueError, match="registered in this process only, and engine 'flower'"):
        check_engine({"model": (MODEL_SPECS, "resgcn")}, "flower")


def _rows(run: stamen.Run) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in ("time", "elapsed_s", "round_s")} for row in run.rows]


def test_the_example_method_is_fedavg_without_momentum_and_differs_with_it(example, tmp_path):
    size = {"csbm-nodes": 300, "num-server-rounds": 4, "local-epochs": 2}
    runs = {
        name: stamen.run({**size, **values}, clients=3, out=tmp_path, run_name=name)
        for name, values in {
            "fedavg": {},
            "plain": {"algorithm": "fednag", "fednag-momentum": 0.0},
            "nag": {"algorithm": "fednag", "fednag-momentum": 0.9},
            "resgcn": {"model": "resgcn"},
        }.items()
    }
    keys = ("global_test_acc", "global_val_acc", "train_loss")
    fedavg, plain, nag = ([[row.get(k) for k in keys] for row in runs[n].rows] for n in ("fedavg", "plain", "nag"))
    assert plain == fedavg  # beta = 0, lr = 1: the average itself
    assert nag[:2] == fedavg[:2] and nag[2] != fedavg[2]  # momentum acts from round 2's aggregate on
    with pytest.raises(ValueError, match="registered in this process only"):
        stamen.run({**size, "model": "resgcn"}, clients=3, out=tmp_path, run_name="never", engine="flower")
    assert not (tmp_path / "never").exists()
    assert runs["resgcn"].config["model"] == "resgcn" and runs["resgcn"].rows[-1]["global_test_acc"] is not None


def test_a_plugin_key_is_a_dimension_of_a_tuning_space(example):
    from stamen.experiments.tune_space import parse_dimension

    dimension = parse_dimension("fednag-momentum=float:0.1..0.9")
    assert dimension.key == "fednag-momentum"
    with pytest.raises(ValueError, match="fednag-momentum must lie in"):
        parse_dimension("fednag-momentum=float:0.1..1.5")


def test_the_staged_flower_table_gains_a_plugins_keys_once(example, tmp_path):
    """Flower drops an override its table lacks: staging adds a plug-in's keys; Stamen's algorithms' keys are in
    the table already (tests/contract/test_run_config.py) and are not added twice."""
    import tomllib

    from stamen.simulations.flower import stage_app

    text = (stage_app(tmp_path) / "pyproject.toml").read_text()
    table = tomllib.loads(text)["tool"]["flwr"]["app"]["config"]  # a key written twice would not parse
    assert table["fednag-lr"] == 1.0 and table["fednag-momentum"] == ALGORITHMS["fednag"].keys[0].default
    assert table["fedlog-lr"] == 0.001 and text.count("\nfedlog-lr = ") == 1


def test_an_installation_without_stamens_own_entry_points_says_so(capsys):
    """Stamen's algorithms come from its package's entry points: metadata without them (a stale install) is named."""
    from stamen.common.registry import Registry

    empty = Registry("algorithm", "stamen.no-such-group", lambda spec, origin: None, built_in_points=True)
    assert list(empty) == []
    assert "no algorithm of Stamen's own is among the installed entry points" in capsys.readouterr().err
    assert len(ALGORITHMS) >= 23 and capsys.readouterr().err == ""  # the real one holds them
