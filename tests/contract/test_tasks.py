"""The task registry: what each task admits comes from its spec, and a run it cannot do is refused in
one line naming why, before any work."""

import pytest

from stamen.cli.main import main as stamen
from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.run_config import KEYS, RunConfig
from stamen.contract.tasks import TASKS, available

LINK_PREDICTION = "link-prediction"


def test_node_classification_is_the_default_and_admits_every_algorithm_not_made_for_another_task():
    assert RunConfig().task == "node-classification"
    assert TASKS["node-classification"].algorithms == tuple(name for name in ALGORITHMS if not ALGORITHMS[name].task)
    assert {"gcfl", "fedstar"} <= {name for name in ALGORITHMS if ALGORITHMS[name].task == "graph-classification"}
    assert KEYS["task"].choices is not None and set(KEYS["task"].choices) == set(TASKS)


@pytest.mark.parametrize("task", ["node-classification", "link-prediction"])
@pytest.mark.parametrize("algorithm", ["gcfl", "fedstar"])
def test_the_graph_fl_methods_are_refused_by_the_tasks_on_one_graph(task, algorithm):
    with pytest.raises(ValueError) as refused:
        RunConfig.from_flower({"task": task, "algorithm": algorithm})
    assert (
        f"task={task!r} cannot run algorithm={algorithm!r}: it is a method for task 'graph-classification' only"
        in str(refused.value)
        and "\n" not in str(refused.value)
    )


def test_link_prediction_admits_the_weight_averaging_algorithms():
    admitted = TASKS[LINK_PREDICTION].algorithms
    assert {"fedavg", "fedprox", "local", "fedadam", "fedyogi", "fedmedian", "krum"} <= set(admitted)
    for name in admitted:
        RunConfig.from_flower({"task": LINK_PREDICTION, "algorithm": name})


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"algorithm": "fedlog"}, "cannot run algorithm='fedlog': its client part trains a node classifier"),
        ({"algorithm": "fedper"}, "cannot run algorithm='fedper'"),
        ({"privacy": "dp-sgd", "model": "sgc"}, "an edge is no record here: it is both a training label and a message"),
        ({"new-client": True}, "cannot honour new-client=True"),
        ({"unseen-node-frac": 0.2}, "cannot honour unseen-node-frac=0.2"),
        ({"certify-budgets": "1"}, "cannot honour certify-budgets='1': it certifies a node classifier's predictions"),
        ({"unlearn-request": "client:0"}, "cannot honour unlearn-request='client:0'"),
        ({"attack": "label-flip", "malicious-clients": "1"}, "cannot run attack='label-flip': flipping a link's label"),
        ({"link-val-frac": 0.5, "link-test-frac": 0.5}, "link-val-frac + link-test-frac must be < 1"),
    ],
)
def test_link_prediction_refuses_what_it_cannot_run(changes, named):
    with pytest.raises(ValueError, match="task='link-prediction'|link-val-frac") as refused:
        RunConfig.from_flower({"task": LINK_PREDICTION, **changes})
    assert named in str(refused.value)
    assert "\n" not in str(refused.value)


GRAPH_RUN = {"task": "graph-classification", "dataset": "graphs-synth", "partitioner": "random", "model": "gin"}


def test_graph_classification_is_available_on_graph_sets():
    assert "graph-classification" in available()
    for name in TASKS["graph-classification"].algorithms:
        RunConfig.from_flower({**GRAPH_RUN, "algorithm": name})
    RunConfig.from_flower({**GRAPH_RUN, "dataset": "tu:MUTAG", "partitioner": "label-dirichlet", "model": "gcn"})


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"dataset": "cora"}, "dataset='cora' is one graph cut into subgraphs: use dataset graphs-synth or tu:NAME"),
        ({"partitioner": "metis"}, "partitioner='metis' cuts one graph by its edges"),
        ({"model": "sage"}, "cannot train model='sage'; use model gcn or gin"),
        ({"algorithm": "fedlog"}, "not a graph classifier"),
        ({"missing-classes": 1}, "cannot honour missing-classes=1"),
        ({"new-client": True}, "cannot honour new-client=True"),
        ({"unlearn-request": "client:0"}, "cannot honour unlearn-request='client:0'"),
        ({"certify-budgets": "1"}, "cannot honour certify-budgets='1'"),
    ],
)
def test_graph_classification_refuses_what_it_cannot_run(changes, named):
    with pytest.raises(ValueError) as refused:
        RunConfig.from_flower({**GRAPH_RUN, **changes})
    assert named in str(refused.value) and "\n" not in str(refused.value)


PRIVATE_AND_ROBUST = (
    {"privacy": "client-dp"},
    {"secure-aggregation": True},
    {"attack": "sign-flip", "malicious-clients": "1"},
    {"attack": "gaussian", "malicious-clients": "1", "algorithm": "fedmedian"},
)


@pytest.mark.parametrize("changes", PRIVATE_AND_ROBUST)
@pytest.mark.parametrize("task", [LINK_PREDICTION, "graph-classification"])
def test_the_weight_level_privacy_and_attacks_carry_over_to_every_task(task, changes):
    base = GRAPH_RUN if task == "graph-classification" else {"task": task}
    RunConfig.from_flower({**base, **changes})


def test_graph_classification_admits_per_graph_dp_sgd_and_graph_label_flips_on_any_graph_model():
    for model in TASKS["graph-classification"].models:  # a graph is a record: no decoupled model needed
        RunConfig.from_flower({**GRAPH_RUN, "model": model, "privacy": "dp-sgd"})
    RunConfig.from_flower({**GRAPH_RUN, "attack": "label-flip", "malicious-clients": "1"})


@pytest.mark.parametrize("task", ["node-classification", "link-prediction"])
def test_a_graph_set_is_refused_by_the_tasks_on_one_graph(task):
    with pytest.raises(ValueError, match="dataset='graphs-synth' is a set of small graphs"):
        RunConfig.from_flower({"task": task, "dataset": "graphs-synth"})
    with pytest.raises(ValueError, match="cannot train model='gin'"):
        RunConfig.from_flower({"task": task, "model": "gin"})


def test_the_command_refuses_in_one_line_with_exit_2(tmp_path, capsys):
    code = stamen(
        ["run", "--engine", "inprocess", "--clients", "3", "-c", f"task='link-prediction' algorithm='fedproto' "
         f"output-dir='{tmp_path}'"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "task='link-prediction' cannot run algorithm='fedproto'" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing created before the refusal
