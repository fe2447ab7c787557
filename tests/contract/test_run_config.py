import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from stamen.common.registry import BUILT_IN
from stamen.contract.algorithms import ALGORITHMS, admitting, plugin_keys
from stamen.contract.run_config import KEYS, SECTIONS, RunConfig
from stamen.contract.unlearn_methods import UNLEARN_METHOD_SPECS

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_defaults_are_the_pyproject_run_config():
    """Flower's table holds every key a run may be given, the algorithms' too (Flower drops an override the table
    lacks): it equals the core keys and the registered algorithms' keys (their specs'), with their defaults."""
    table = tomllib.loads(PYPROJECT.read_text())["tool"]["flwr"]["app"]["config"]
    assert RunConfig.from_flower(table) == RunConfig()
    assert RunConfig().to_flower() == table
    every = {**KEYS, **plugin_keys()}
    assert {name: type(value) for name, value in table.items()} == {name: type(k.default) for name, k in every.items()}
    assert all(ALGORITHMS.origin(name) == BUILT_IN for name, spec in ALGORITHMS.items() if spec.keys)


def test_every_key_is_declared_once_with_type_section_and_help():
    fields = [item for item in dataclasses.fields(RunConfig) if item.name != "plugin_options"]
    assert [f.name.replace("_", "-") for f in fields] == list(KEYS)
    for item, key in zip(fields, KEYS.values()):
        assert item.type == key.kind, key.name  # the annotation is the declared type
        assert key.section in SECTIONS and key.help.strip(), key.name
        key.check(key.default)  # every default meets its own constraint
        assert "\n" not in key.help and "\n" not in key.accepted()


@pytest.mark.parametrize(
    "values,message",
    [
        ({"num-server-rounds": "ten"}, "'num-server-rounds' must be an integer"),
        ({"lr": True}, "'lr' must be a number"),
        ({"lr": -1.0}, "lr must be > 0"),
        ({"device": "tpu"}, "device must be auto, cpu, cuda or cuda:N"),
        ({"learning-rate": 0.1}, "unknown run-config key"),
        ({"lrr": 0.1}, "unknown run-config key 'lrr' (did you mean 'lr'?)"),
        (
            {"model": "gcnn"},
            "unknown model 'gcnn'; model must be one of: gcn, sgc, sage, gat, appnp, mlp, gin; did you",
        ),
        ({"model": "gcnn"}, "gin; did you mean 'gcn'?"),
        ({"algorithm": "fedavgn"}, "did you mean 'fedavg'?"),
        ({"dataset": "coraa"}, "unknown dataset 'coraa'"),
        ({"partitioner": "metiss"}, "did you mean 'metis'?"),
        ({"fraction-train": 0.0}, "fraction-train must lie in (0, 1], got 0.0"),
        ({"train-frac": 0.7, "val-frac": 0.3}, "train-frac + val-frac must be < 1"),
    ],
)
def test_malformed_values_are_named(values, message):
    with pytest.raises(ValueError, match="^[^\n]*$") as error:
        RunConfig.from_flower(values)
    assert message in str(error.value)


FLOAT_KEYS = [key for key in KEYS.values() if key.kind == "float"]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("key", FLOAT_KEYS, ids=[key.name for key in FLOAT_KEYS])
def test_every_float_key_refuses_a_non_finite_number(key, value):
    with pytest.raises(ValueError, match="^[^\n]*$") as error:
        RunConfig.from_flower({key.name: value})
    assert str(error.value) == f"{key.name} must be a finite number, got {value!r}"


def test_a_range_holds_no_nan():
    from stamen.contract.keys import ge, gt, within

    for bound in (gt(0), ge(0), within(0, 1)):
        assert not bound.holds(float("nan"))
    assert gt(0).holds(float("inf"))  # a range alone says nothing of infinity: Key.check refuses it first


def test_certify_arch_is_checked_before_training_without_budgets():
    """A plain ``flwr run`` checks the run config before the first round: certify-arch too."""
    with pytest.raises(ValueError, match="unknown certify-arch 'transformer'"):
        RunConfig.from_flower({"certify-arch": "transformer"})


def test_certify_arch_names_are_the_ntk_architectures():
    from stamen.certify.ntk import ARCHITECTURES

    assert tuple(KEYS["certify-arch"].choices) == ARCHITECTURES


def test_a_private_run_cannot_be_resumed():
    with pytest.raises(ValueError, match="accountants start empty"):
        RunConfig.from_flower({"privacy": "dp-sgd", "model": "sgc", "resume-from": "runs/earlier"})


@pytest.mark.parametrize("privacy", ["dp-sgd", "client-dp"])
def test_privacy_compatibility_comes_from_the_algorithm_specs(privacy):
    for name, spec in ALGORITHMS.items():
        if spec.task:  # an algorithm made for one task: its task's privacy modes (tests/contract/test_tasks.py)
            assert not spec.admits(privacy)
            continue
        values = {"privacy": privacy, "model": "sgc", "algorithm": name}
        if spec.admits(privacy):
            assert RunConfig.from_flower(values).algorithm == name
        else:
            with pytest.raises(ValueError, match=re.escape(f"not {name!r}")) as error:
                RunConfig.from_flower(values)
            assert all(other in str(error.value) for other in admitting(privacy))


# A run of each task an algorithm may be made for (AlgorithmSpec.task).
TASK_RUNS = {
    "graph-classification": {
        "task": "graph-classification", "dataset": "graphs-synth", "partitioner": "random", "model": "gin"
    }
}  # fmt: skip


def test_resume_rules_come_from_the_specs():
    for name, method in UNLEARN_METHOD_SPECS.items():
        values = {"unlearn-request": "class:1", "unlearn-method": name, "resume-from": "runs/earlier"}
        if method.replays_history:
            with pytest.raises(ValueError, match="choose another unlearn-method"):
                RunConfig.from_flower(values)
        else:
            assert RunConfig.from_flower(values).unlearn_method == name
    for name, spec in ALGORITHMS.items():
        values = {"algorithm": name, "resume-from": "runs/earlier", **TASK_RUNS.get(spec.task, {})}
        if spec.resumable:
            assert RunConfig.from_flower(values).algorithm == name
        else:
            with pytest.raises(ValueError, match="is not in the checkpoint"):
                RunConfig.from_flower(values)


def test_algorithm_specs_name_declared_keys_and_loadable_parts():
    from stamen.client.algorithms import ClientAlgorithm, client_algorithm
    from stamen.server.algorithms import server_algorithm

    assert tuple(KEYS["algorithm"].choices) == tuple(ALGORITHMS)
    for name, spec in ALGORITHMS.items():
        assert set(spec.options) <= set(KEYS) | set(plugin_keys()), name
        assert set(spec.privacy) <= set(KEYS["privacy"].choices) and "none" in spec.privacy, name
        assert server_algorithm(name).AGGREGATES == spec.aggregates
        assert isinstance(client_algorithm(name)[1], ClientAlgorithm)
    with pytest.raises(ValueError, match="did you mean 'fedprox'"):
        server_algorithm("fedprx")


def test_the_server_app_runs_the_same_validation():
    """``stamen/server/app.py:check_run_config`` (a plain ``flwr run``) is the contract's validation plus run-name."""
    from stamen.server.app import check_run_config

    for values in ({"certify-arch": "transformer"}, {"lrr": 0.1}, {"privacy": "client-dp", "algorithm": "local"}):
        with pytest.raises(ValueError) as expected:
            RunConfig.from_flower(values)
        with pytest.raises(ValueError, match="^" + re.escape(str(expected.value)) + "$"):
            check_run_config(values)
    with pytest.raises(ValueError, match="one plain folder name"):
        check_run_config({"run-name": "../x"})


# The tests above check that the rules follow the specs; these pin the specs' facts themselves,
# stated independently (docs/privacy.md, docs/algorithms.md), so a wrong spec line fails here.
PINNED = {
    "dp-sgd": {"local", "fedavg", "fedavgm", "fedadam", "fedyogi", "fedadagrad", "fedmedian", "fedtrimmedavg"}
    | {"krum", "multikrum", "bulyan"},
    "client-dp": {"fedavg", "fedprox"},  # the server clips and noises a mean of the clients' updates
    "resumable": {"fedavg", "fedprox", "local", "fedlog", "fedmedian", "fedtrimmedavg", "krum", "multikrum", "bulyan"},
    "keeps no global model": {"local"},
}


@pytest.mark.parametrize("fact", sorted(PINNED))
def test_the_algorithm_specs_state_the_pinned_facts(fact):
    holds = {
        "dp-sgd": lambda spec: spec.admits("dp-sgd"),
        "client-dp": lambda spec: spec.admits("client-dp"),
        "resumable": lambda spec: spec.resumable,
        "keeps no global model": lambda spec: not spec.aggregates,
    }[fact]
    assert {name for name, spec in ALGORITHMS.items() if holds(spec)} == PINNED[fact]


def test_only_federaser_replays_the_training_history():
    assert {name for name, spec in UNLEARN_METHOD_SPECS.items() if spec.replays_history} == {"federaser"}


def test_the_federation_is_derived_from_the_typed_config_and_the_defaults_agree():
    import inspect

    from stamen.graphs.csbm import make_csbm
    from stamen.graphs.spec import FederationSpec

    config = RunConfig.from_flower({})
    spec = config.federation(10)
    # the graphs library's own defaults are the run config's (one set of defaults, checked)
    assert dataclasses.replace(spec, dataset_options=()) == FederationSpec(num_clients=10)
    generator = {name: p.default for name, p in inspect.signature(make_csbm).parameters.items() if name != "seed"}
    assert dict(spec.dataset_options) == generator
    changed = RunConfig.from_flower({"csbm-nodes": 500, "partitioner": "label-dirichlet", "dirichlet-alpha": 0.3})
    assert changed.federation(4).num_clients == 4
    assert dict(changed.federation(4).dataset_options)["num_nodes"] == 500
    assert (changed.federation(4).partitioner, changed.federation(4).dirichlet_alpha) == ("label-dirichlet", 0.3)
    assert config.federation(3, data_root="/hosts/node-1").data_root == "/hosts/node-1"
    assert RunConfig.from_flower({"dataset": "cora"}).federation(3).dataset_options == ()


def test_replace_checks_the_copy():
    config = RunConfig.from_flower({})
    assert config.replace(local_epochs=3).local_epochs == 3
    assert config.local_epochs != 3  # the original is untouched
    with pytest.raises(ValueError, match="local-epochs must be >= 1"):
        config.replace(local_epochs=0)
