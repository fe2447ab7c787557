"""fedsage-schedule: when fedsage+'s federated generator steps happen (stamen/algorithms/fedsage/server.py), in
process, csbm."""

import pytest
import torch
from flwr.app import Message, MessageType

from stamen.algorithms.fedsage import messages as wire
from stamen.algorithms.fedsage.client import GENERATOR
from stamen.cli.main import main as stamen
from stamen.client.job import private_tensors
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import run_rounds
from stamen.simulations.inprocess import InProcessGrid, task_identity

CLIENTS = 3
RUN = {"num-server-rounds": 3, "csbm-nodes": 300, "min-clients": 2, "algorithm": "fedsage+", "fedsage-gen-rounds": 2}


class OrderGrid(InProcessGrid):
    """The in-process grid, keeping every message the server sends, in order, and each client's
    generator after every exchange."""

    def __init__(self, run_config: dict, num_nodes: int) -> None:
        super().__init__(run_config, num_nodes)
        self.sent: list[Message] = []

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        self.sent += messages
        return super().send_and_receive(messages, timeout=timeout)


def _run(**values):
    config = RunConfig.from_flower({**RUN, **values})
    grid = OrderGrid(config.to_flower(), CLIENTS)
    strategy = server_algorithm("fedsage+").make_strategy(config)
    run_rounds(grid, strategy, config.num_server_rounds, True, 2, 60.0, lambda row: None)
    return grid, strategy


def _timeline(grid: OrderGrid) -> list[str]:
    """``step <t>`` for each generator step and ``round <r>`` for each classifier round, in order."""
    events: list[str] = []
    for message in grid.sent:
        config = message.content["config"] if "config" in message.content else {}
        if message.metadata.message_type == MessageType.TRAIN:
            event = f"round {config.get('server-round')}"
            if not events or events[-1] != event:
                events.append(event)
        elif config.get("query") == wire.FEDSAGE_STEP_QUERY:
            event = f"step {int(config.get(wire.FEDSAGE_STEP))}"
            if not events or events[-1] != event:
                events.append(event)
    return events


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


@pytest.fixture(scope="module")
def paper():
    with task_identity():
        return _run()


@pytest.fixture(scope="module")
def pretrain():
    with task_identity():
        return _run(**{"fedsage-schedule": "pretrain"})


def test_paper_schedule_takes_generator_step_t_just_before_classifier_round_t(paper):
    grid, strategy = paper
    assert _timeline(grid) == ["step 1", "round 1", "step 2", "round 2", "round 3"]
    assert strategy.step_rounds == [1, 2]
    # every client ends with the generator of the last step, which mends its graph from round 2 on
    assert all(GENERATOR in context.state for context in grid.contexts.values())


def test_pretrain_schedule_takes_every_generator_step_before_the_first_round(pretrain):
    grid, strategy = pretrain
    assert _timeline(grid) == ["step 1", "step 2", "round 1", "round 2", "round 3"]
    assert strategy.step_rounds == [1, 1]


def test_both_schedules_train_the_same_generators_with_the_same_steps(paper, pretrain):
    # the schedule moves the steps between rounds, not what a step computes
    for node in sorted(paper[0].contexts):
        a, b = (private_tensors(g.contexts[node].state[GENERATOR]) for g in (paper[0], pretrain[0]))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_paper_schedule_with_more_generator_steps_than_rounds_is_one_line_and_exit_2(tmp_path, capsys):
    code = stamen(
        ["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c"]
        + [f"algorithm='fedsage+' num-server-rounds=3 fedsage-gen-rounds=4 output-dir='{tmp_path}'"]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "fedsage-gen-rounds=4 > num-server-rounds=3" in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())  # before any work
