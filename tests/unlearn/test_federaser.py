"""``federaser``: the recorded updates add up to the model, and the replay never reads the forgotten data."""

import copy

import pytest
import torch

from graphs import FederationSpec, build_federation
from unlearn.baselines import fedavg_train
from unlearn.federaser import UpdateHistory, federaser, train_with_history
from unlearn.harness import run_request
from unlearn.requests import parse_request, split_federation


@pytest.fixture(name="trained")
def trained_fixture(small_config):
    config = small_config(num_server_rounds=10)
    clients = build_federation(FederationSpec.from_run_config(config.to_flower(), 3)).clients
    model, history = train_with_history(clients, config, seed=0, window=3)
    return config, clients, model, history


def test_recorded_updates_add_up_to_the_trained_model_and_do_not_change_training(trained):
    config, clients, model, history = trained
    assert len(history.windows) == 4 and all(set(w) == {0, 1, 2} for w in history.windows)  # 3, 3, 3, 1 rounds
    weights = [int(c.train_mask.sum()) for c in clients]
    for key, value in model.state_dict().items():
        summed = sum(w[i][key] * weights[i] for w in history.windows for i in range(3)) / sum(weights)
        torch.testing.assert_close(history.initial[key] + summed, value, atol=1e-5, rtol=0)
    plain = fedavg_train(clients, config, seed=0)
    for key, value in plain.state_dict().items():
        assert torch.equal(value, model.state_dict()[key])


def test_a_replayed_step_takes_the_staying_clients_recorded_norm(small_config):
    config = small_config(num_server_rounds=4)
    clients = build_federation(FederationSpec.from_run_config(config.to_flower(), 2)).clients
    _, history = train_with_history(clients, config, seed=0, window=2)
    split = split_federation(clients, parse_request("client:1", 2, int(clients[0].num_classes)), seed=0)
    assert split.remaining_clients == [0]
    one_window = UpdateHistory(history.initial, history.window, history.windows[:1])
    replayed = federaser(one_window, split, config, seed=0).state_dict()
    differs = []
    for key, recorded in history.windows[0][0].items():
        step = replayed[key] - history.initial[key]
        assert step.norm().item() == pytest.approx(recorded.norm().item(), rel=1e-5)
        differs.append(history.windows[0][1][key].norm().item() != pytest.approx(recorded.norm().item(), rel=1e-3))
    assert any(differs)  # the leaving client's magnitudes differ, so taking them would fail the check above


def test_the_replay_reads_neither_the_forgotten_data_nor_the_leaving_clients_updates(trained):
    config, clients, _, history = trained
    num_classes = int(clients[0].num_classes)
    for text, leaving in (("client:2", 2), ("nodes:1:0.5", None)):
        split = split_federation(clients, parse_request(text, 3, num_classes), seed=0)
        reference = federaser(history, split, config, seed=0).state_dict()
        scrambled = copy.copy(split)
        scrambled.original = [copy.copy(d) for d in split.original]
        for data in scrambled.original:
            data.x = torch.randn_like(data.x)
            data.y = torch.randint(0, num_classes, data.y.shape)
        tampered = copy.deepcopy(history)
        if leaving is not None:
            for window in tampered.windows:
                window[leaving] = {k: torch.randn_like(v) for k, v in window[leaving].items()}
        result = federaser(tampered, scrambled, config, seed=0).state_dict()
        for key, value in reference.items():
            assert torch.equal(value, result[key]), (text, key)


def test_clear_errors(small_config, trained):
    config, clients, model, history = trained
    with pytest.raises(ValueError, match="window must be at least 1"):
        UpdateHistory(history.initial, 0)
    bigger = build_federation(FederationSpec.from_run_config(config.to_flower(), 4)).clients
    split = split_federation(bigger, parse_request("client:0", 4, int(bigger[0].num_classes)), seed=0)
    with pytest.raises(ValueError, match=r"holds no update of client\(s\) \[3\]"):
        federaser(history, split, config, seed=0)
    given = {0: model.state_dict()}  # an original without its recorded updates, as a saved Flower run gives
    with pytest.raises(ValueError, match="federaser replays the clients' recorded training updates"):
        run_request(config, 3, "client:2", ["federaser"], [0], originals=given)
