"""Federated unlearning through Flower messages, with clients called in-process."""

import numpy as np
import pytest
import torch
from flwr.app import Array, ArrayRecord, MessageType

from stamen.contract import protocol as p
from stamen.contract.requests import parse_request
from stamen.contract.run_config import RunConfig
from stamen.experiments.unlearn_experiment import new_model
from stamen.graphs import build_federation
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import run_rounds
from stamen.server.privacy import initial_arrays
from stamen.server.unlearning import history_recorder, unlearn_federation
from stamen.server.unlearning.rollcall import query
from stamen.server.unlearning.wash import check_statistics
from stamen.simulations.inprocess import InProcessGrid, task_identity
from stamen.unlearn.federaser import UpdateHistory
from stamen.unlearn.requests import split_federation
from stamen.unlearn.wash import wash

# A well-separated graph: the held-out rule refuses edits that change more than 1% of the other
# predictions, which on a weakly separable graph leaves the class nearly untouched.
RUN = {"num-server-rounds": 4, "csbm-nodes": 600, "csbm-signal": 2.0, "local-epochs": 5, "min-clients": 2}


@pytest.fixture(scope="module", autouse=True)
def identity():
    with task_identity():
        yield


@pytest.fixture(scope="module")
def trained(identity):
    """A grid of 3 in-process clients and the FedAvg weights it trained."""
    config = RunConfig.from_flower(RUN)
    grid = InProcessGrid(config, 3)
    module = server_algorithm("fedavg")
    arrays = run_rounds(grid, module.make_strategy(config), config.num_server_rounds, True, 2, 60.0, lambda row: None)
    return grid, arrays


def _unlearn(grid, arrays, request, tmp_path, failing=frozenset(), method="wash"):
    config = RunConfig.from_flower({**RUN, "unlearn-request": request, "unlearn-method": method})
    grid.contexts = {
        node: type(ctx)(ctx.run_id, ctx.node_id, ctx.node_config, ctx.state, config.to_flower())
        for node, ctx in grid.contexts.items()
    }
    grid.failing = {grid.NODE_OFFSET + partition for partition in failing}
    try:
        module = server_algorithm("fedavg")
        result, unlearned = unlearn_federation(grid, config, arrays, module.make_strategy, True, tmp_path, 10.0)
        return (result.as_dict(), unlearned), config
    finally:
        grid.failing = set()


def test_federated_wash_is_the_in_process_edit_and_forgets_the_class(trained, tmp_path):
    grid, arrays = trained
    (result, unlearned), config = _unlearn(grid, arrays, "class:1", tmp_path)
    assert result["method_used"] == "wash" and (tmp_path / "unlearn.json").is_file()
    clients = build_federation(config.federation(3)).clients
    model = new_model(config, clients[0].num_features, int(clients[0].num_classes), config.seed)
    model.load_state_dict(arrays.to_torch_state_dict())
    split = split_federation(clients, parse_request("class:1", 3, int(clients[0].num_classes)), config.seed)
    washed = wash(model, split)
    edited = unlearned.to_torch_state_dict()
    assert torch.allclose(edited["head.weight"], washed.head.weight, atol=1e-5)
    assert torch.allclose(edited["head.bias"], washed.head.bias, atol=1e-5)
    before, after = result["original"], result["unlearned"]
    assert before["test_forgotten_class"] > 0.5 and after["test_forgotten_class"] < 0.1
    assert abs(after["test_other_classes"] - before["test_other_classes"]) < 0.05


def test_statistics_replies_are_key_sums_only(trained):
    grid, arrays = trained
    messages = query(p.WASH_STATISTICS_QUERY, parse_request("nodes:0:0.5"), arrays, grid.get_node_ids())
    replies = grid.send_and_receive(messages)
    hidden = arrays["head.weight"].shape[1]
    for reply in replies:
        record = reply.content[p.WASH_STATISTICS]
        sums = check_statistics(record, hidden + 1, arrays["head.weight"].shape[0])
        forgets = int(reply.content[p.METRICS][p.PARTITION_ID]) == 0
        assert (np.abs(sums[p.FORGET_GRAM]).sum() > 0) == forgets
    too_many = ArrayRecord({**dict(record), "rows": Array(np.zeros((7, hidden + 1)))})
    with pytest.raises(RuntimeError, match="exactly"):
        check_statistics(too_many, hidden + 1, 3)
    rows = ArrayRecord({**dict(record), p.FORGET_CROSS: Array(np.zeros((50, hidden + 1)))})
    with pytest.raises(RuntimeError, match="float64"):
        check_statistics(rows, hidden + 1, arrays["head.weight"].shape[0])


def test_a_departed_client_that_does_not_answer_makes_the_server_retrain(trained, tmp_path):
    grid, arrays = trained
    (result, unlearned), _ = _unlearn(grid, arrays, "client:2", tmp_path, failing={2})
    assert result["method_used"] == "retrain" and "did not answer" in result["fallback"]
    assert result["evaluated_clients"] == [0, 1]
    assert result["unlearned"]["test_global"] > 0.5  # retraining on clients 0 and 1 learned
    assert not np.allclose(unlearned["head.weight"].numpy(), arrays["head.weight"].numpy())


def test_federated_laf_moves_the_encoder_in_capped_rounds_and_keeps_the_head(trained, tmp_path):
    grid, arrays = trained
    config_rounds = RUN["num-server-rounds"]
    (result, unlearned), _ = _unlearn(grid, arrays, "nodes:0:0.5", tmp_path, method="laf")
    assert result["method_used"] == "laf" and result["laf"]["rounds"] == max(1, config_rounds // 10)
    before, after = arrays.to_torch_state_dict(), unlearned.to_torch_state_dict()
    assert torch.allclose(before["head.weight"], after["head.weight"], atol=1e-6)  # frozen (FedAvg rounds only)
    moved = [
        name
        for name in before
        if not name.startswith("head.") and not torch.allclose(before[name], after[name], atol=1e-4)
    ]
    assert moved, "no encoder weight moved"
    # LAF alone is not meant to move Df accuracy much in a federation (docs/unlearning.md: its
    # rounds average one alternation per client; laf+ft and laf+r make up for it): measured
    # 0.923 before and after here.
    before_acc, after_acc = result["original"]["acc_forget"], result["unlearned"]["acc_forget"]
    assert abs(after_acc - before_acc) <= 0.05 and result["unlearned"]["test_client"] is not None


def test_federated_laf_ft_fine_tunes_after_laf_on_the_clients_that_stay(trained, tmp_path, monkeypatch):
    grid, arrays = trained
    trained_nodes: list[tuple[int, str]] = []
    send = grid.send_and_receive

    def recording(messages, *, timeout=None):
        messages = list(messages)
        for message in messages:
            if message.metadata.message_type == MessageType.TRAIN:
                config = message.content[p.CONFIG]
                phase = "laf" if p.UNLEARN_LAF in config else "finetune" if p.UNLEARN_RETRAIN in config else "train"
                trained_nodes.append((message.metadata.dst_node_id, phase))
        return send(messages, timeout=timeout)

    monkeypatch.setattr(grid, "send_and_receive", recording)
    (result, unlearned), _ = _unlearn(grid, arrays, "client:2", tmp_path, method="laf+ft")
    rounds = RUN["num-server-rounds"] // 10 or 1
    assert result["method_used"] == "laf+ft" and result["finetune"]["rounds"] == rounds
    staying = [node for node in grid.get_node_ids() if node != grid.NODE_OFFSET + 2]
    assert sorted({node for node, phase in trained_nodes if phase == "laf"}) == sorted(grid.get_node_ids())
    assert sorted(node for node, phase in trained_nodes if phase == "finetune") == sorted(staying * rounds)
    before, after = arrays.to_torch_state_dict(), unlearned.to_torch_state_dict()
    assert not torch.allclose(before["head.weight"], after["head.weight"], atol=1e-4)  # LAF alone keeps the head
    assert result["unlearned"]["test_global"] > 0.5


def test_federated_federaser_replays_the_recorded_updates_without_a_departed_client(identity, tmp_path, monkeypatch):
    config = RunConfig.from_flower(RUN)
    grid = InProcessGrid(config, 3)
    module = server_algorithm("fedavg")
    initial = initial_arrays(grid, 60.0)
    history = UpdateHistory(initial.to_torch_state_dict(), window=2)
    arrays = run_rounds(
        grid,
        module.make_strategy(config),
        config.num_server_rounds,
        True,
        2,
        60.0,
        lambda row: None,
        initial=initial,
        on_replies=history_recorder(history),
    )
    assert len(history.windows) == 2 and all(set(window) == {0, 1, 2} for window in history.windows)
    clients = build_federation(config.federation(3)).clients
    weights = [int(c.train_mask.sum()) for c in clients]
    for key, value in arrays.to_torch_state_dict().items():  # FedAvg: the start plus the weighted updates
        summed = sum(w[i][key] * weights[i] for w in history.windows for i in range(3)) / sum(weights)
        torch.testing.assert_close(history.initial[key] + summed, value, atol=1e-5, rtol=0)

    trained_nodes: list[int] = []
    send = grid.send_and_receive

    def recording(messages, *, timeout=None):
        messages = list(messages)
        trained_nodes.extend(m.metadata.dst_node_id for m in messages if m.metadata.message_type == MessageType.TRAIN)
        return send(messages, timeout=timeout)

    monkeypatch.setattr(grid, "send_and_receive", recording)
    unlearn_config = RunConfig.from_flower({**RUN, "unlearn-request": "client:2", "unlearn-method": "federaser"})
    grid.contexts = {
        node: type(ctx)(ctx.run_id, ctx.node_id, ctx.node_config, ctx.state, unlearn_config.to_flower())
        for node, ctx in grid.contexts.items()
    }
    grid.failing = {grid.NODE_OFFSET + 2}  # the leaving client is gone: the replay needs nothing of it
    result, unlearned = unlearn_federation(
        grid, unlearn_config, arrays, module.make_strategy, True, tmp_path, 10.0, history=history
    )
    result = result.as_dict()
    assert result["method_used"] == "federaser" and "fallback" not in result
    assert result["federaser"]["calibration_rounds"] == 2
    assert sorted(trained_nodes) == sorted([grid.NODE_OFFSET, grid.NODE_OFFSET + 1] * 2)
    assert result["evaluated_clients"] == [0, 1] and result["unlearned"]["test_global"] > 0.5
    assert not np.allclose(unlearned["head.weight"].numpy(), arrays["head.weight"].numpy())
    with pytest.raises(RuntimeError, match="federaser needs the clients' updates recorded during training"):
        unlearn_federation(grid, unlearn_config, arrays, module.make_strategy, True, tmp_path, 10.0)
    with pytest.raises(ValueError, match="a resumed run lacks"):
        RunConfig.from_flower({**RUN, "unlearn-request": "client:2", "unlearn-method": "federaser", "resume-from": "x"})


@pytest.mark.parametrize(
    "method, phases, drop",
    [  # drop: the least fall of the forgotten nodes' accuracy from the original's 0.923 (measured 0.29, 0.90, 0.27)
        ("finetune", {p.UNLEARN_RETRAIN: "staying"}, 0.2),
        ("gradient-ascent", {p.UNLEARN_ASCENT: "holder"}, 0.7),
        ("laf+r", {p.UNLEARN_LAF: "all", p.UNLEARN_REPAIR: "staying"}, 0.2),
    ],
)
def test_the_methods_once_in_process_only_run_as_federated_rounds(trained, tmp_path, monkeypatch, method, phases, drop):
    grid, arrays = trained
    seen: dict[str, set[int]] = {}
    send = grid.send_and_receive

    def recording(messages, *, timeout=None):
        messages = list(messages)
        for message in messages:
            if message.metadata.message_type == MessageType.TRAIN:
                flags = [key for key in p.UNLEARN_TRAIN_KEYS if key in message.content[p.CONFIG]]
                assert len(flags) == 1, flags  # every unlearning round names its phase
                seen.setdefault(flags[0], set()).add(message.metadata.dst_node_id)
        return send(messages, timeout=timeout)

    monkeypatch.setattr(grid, "send_and_receive", recording)
    (result, unlearned), _ = _unlearn(grid, arrays, "nodes:0:0.5", tmp_path, method=method)
    section, figure = {"finetune": ("finetune", "rounds"), "gradient-ascent": (method, "steps")}.get(
        method, ("repair", "rounds")
    )
    assert result["method_used"] == method and result[section][figure] >= 1
    everyone = set(grid.get_node_ids())
    expected = {"all": everyone, "staying": everyone, "holder": {grid.NODE_OFFSET}}  # nodes:0 keeps client 0
    assert seen == {flag: expected[who] for flag, who in phases.items()}
    before, after = arrays.to_torch_state_dict(), unlearned.to_torch_state_dict()
    assert not torch.allclose(before["head.weight"], after["head.weight"], atol=1e-6)
    assert result["unlearned"]["acc_forget"] <= result["original"]["acc_forget"] - drop
    assert result["unlearned"]["test_global"] > 0.3
