"""The task registry: what each task admits comes from its spec, and a run it cannot do is refused in
one line naming why, before any work."""

import pytest

from contract.algorithms import ALGORITHMS
from contract.run_config import KEYS, RunConfig
from contract.tasks import LINK_PREDICTION, TASKS, available
from simulations.cli import main as stamen


def test_node_classification_is_the_default_and_admits_everything():
    assert RunConfig().task == "node-classification"
    assert TASKS["node-classification"].algorithms == tuple(ALGORITHMS)
    assert KEYS["task"].choices is not None and set(KEYS["task"].choices) == set(TASKS)


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
        ({"privacy": "client-dp"}, "does not yet admit privacy='client-dp'"),
        ({"new-client": True}, "cannot honour new-client=True"),
        ({"unseen-node-frac": 0.2}, "cannot honour unseen-node-frac=0.2"),
        ({"certify-budgets": "1"}, "cannot honour certify-budgets='1'"),
        ({"unlearn-request": "client:0"}, "cannot honour unlearn-request='client:0'"),
        ({"secure-aggregation": True}, "cannot honour secure-aggregation=True"),
        ({"attack": "label-flip", "malicious-clients": "1"}, "attack='label-flip' flips node labels"),
        ({"link-val-frac": 0.5, "link-test-frac": 0.5}, "link-val-frac + link-test-frac must be < 1"),
    ],
)
def test_link_prediction_refuses_what_it_cannot_run(changes, named):
    with pytest.raises(ValueError, match="task='link-prediction'|link-val-frac") as refused:
        RunConfig.from_flower({"task": LINK_PREDICTION, **changes})
    assert named in str(refused.value)
    assert "\n" not in str(refused.value)


def test_graph_classification_is_declared_but_not_yet_available():
    assert "graph-classification" in TASKS and "graph-classification" not in available()
    with pytest.raises(ValueError, match="task='graph-classification' is not yet available"):
        RunConfig.from_flower({"task": "graph-classification"})


def test_the_command_refuses_in_one_line_with_exit_2(tmp_path, capsys):
    code = stamen(
        ["run", "--engine", "inprocess", "--clients", "3", "-c", f"task='link-prediction' algorithm='fedproto' "
         f"output-dir='{tmp_path}'"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "task='link-prediction' cannot run algorithm='fedproto'" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing created before the refusal
