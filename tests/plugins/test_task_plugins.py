"""A task plug-in registered from Python (examples/08_own_task.py): a run-config choice, refused in one line
where its spec or the engine does not admit it, and what its client part computes."""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

import stamen
from stamen.common.registry import PYTHON, check_engine
from stamen.contract.plugins import plugin_choices
from stamen.contract.run_config import KEYS, RunConfig
from stamen.contract.tasks import TASKS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMOOTH = "smooth-node-classification"


@pytest.fixture
def smooth(registries):
    """The example's module (imported, not run as a script), its task registered from Python."""
    module = types.ModuleType("stamen_example_smooth")
    module.__dict__.update(runpy.run_path(str(EXAMPLES / "08_own_task.py"), run_name="stamen_example_smooth"))
    sys.modules["stamen_example_smooth"] = module
    stamen.register_task(module.TASK)
    yield module
    del sys.modules["stamen_example_smooth"]


def test_a_registered_task_is_a_choice_that_trains_node_classification_models(smooth):
    assert SMOOTH in TASKS and TASKS.origin(SMOOTH) == PYTHON
    assert SMOOTH in KEYS["task"].choices and "label-smoothed" in KEYS["task"].choices[SMOOTH]
    assert TASKS[SMOOTH].models == TASKS["node-classification"].models
    assert RunConfig.from_flower({"task": SMOOTH, "model": "sage"}).task == SMOOTH


@pytest.mark.parametrize(
    "values,message",
    [
        ({"privacy": "dp-sgd", "model": "sgc"}, "task='smooth-node-classification' does not admit privacy='dp-sgd'"),
        ({"model": "gin"}, "task='smooth-node-classification' cannot train model='gin'"),
        ({"algorithm": "gcfl"}, "it is a method for task 'graph-classification' only"),
        ({"dataset": "graphs-synth"}, "dataset='graphs-synth' is a set of small graphs"),
    ],
)
def test_what_the_task_does_not_admit_is_refused_in_one_line_naming_it(smooth, values, message):
    with pytest.raises(ValueError) as error:
        RunConfig.from_flower({"task": SMOOTH, **values})
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_python_only_task_is_refused_on_engines_with_other_processes(smooth):
    config = RunConfig.from_flower({"task": SMOOTH})
    check_engine(plugin_choices(config), "inprocess")
    for engine in ("flower", "deployment"):
        with pytest.raises(ValueError, match=f"task='{SMOOTH}' is registered in this process only") as error:
            check_engine(plugin_choices(config), engine)
        assert "\n" not in str(error.value) and "'stamen.tasks'" in str(error.value)


def test_its_local_step_is_label_smoothed_cross_entropy(smooth):
    torch.manual_seed(0)
    data = Data(
        x=torch.randn(6, 4), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]), y=torch.tensor([0, 1, 2, 0, 1, 2])
    )
    data.train_mask = torch.tensor([True, True, True, True, False, False])
    model = torch.nn.Linear(4, 3)
    job = types.SimpleNamespace(data=data, config=types.SimpleNamespace(local_epochs=1))

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, x, edge_index):
            return self.inner(x)

    wrapped = Wrapped()
    loss = smooth.PART.fit(wrapped, job, torch.optim.SGD(wrapped.parameters(), lr=0.0), 0.0)
    log_p = torch.log_softmax(model(data.x[:4]), dim=1)
    eps = smooth.SMOOTHING
    expected = ((1 - eps) * -log_p[torch.arange(4), data.y[:4]] + eps * -log_p.mean(dim=1)).mean()
    assert loss == pytest.approx(float(expected), rel=1e-6)
    assert loss != pytest.approx(float(-log_p[torch.arange(4), data.y[:4]].mean()), rel=1e-3)  # not plain CE


def test_specs_that_cannot_be_tasks_are_refused(registries):
    with pytest.raises(ValueError, match="is a stamen.TaskSpec"):
        stamen.register_task("mine")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be lower-case letters"):
        stamen.register_task(stamen.TaskSpec("Mine", "m", client="my.client"))
    with pytest.raises(ValueError, match="are not summary figures"):
        stamen.register_task(stamen.TaskSpec("mine", "m", client="my.client", figures=("test_mse",)))
    with pytest.raises(ValueError, match="already registered"):
        stamen.register_task(stamen.TaskSpec("link-prediction", "mine", client="my.client"))


def test_a_python_only_task_is_refused_on_flower_before_anything_is_written(smooth, tmp_path):
    with pytest.raises(ValueError, match=f"task='{SMOOTH}' is registered in this process only") as error:
        stamen.run({"task": SMOOTH, "csbm-nodes": 300}, clients=3, engine="flower", out=tmp_path / "runs", run_name="r")
    assert "\n" not in str(error.value)
    assert not (tmp_path / "runs").exists()
