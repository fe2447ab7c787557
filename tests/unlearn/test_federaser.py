"""``federaser``: the recorded updates add up to the model, and the replay never reads the forgotten data.

Training and replay run through the app's engine (round loop + ClientApp, in-process); the
math (:mod:`stamen.unlearn.federaser`) is what is checked."""

import copy

import pytest
import torch

from stamen.client.job import client_data
from stamen.contract.requests import parse_request
from stamen.experiments.unlearn_experiment import forget_in_process, new_model, run_request, train_original
from stamen.graphs import build_federation
from stamen.unlearn.federaser import UpdateHistory, check_clients
from stamen.unlearn.requests import client_forget_mask


def _train(config, num_clients, window):
    clients = build_federation(config.federation(num_clients)).clients
    initial = new_model(config, clients[0].num_features, int(clients[0].num_classes), 0).state_dict()
    history = UpdateHistory({k: v.clone() for k, v in initial.items()}, window=window)
    return clients, train_original(config, num_clients, initial, history), history


def _replay(config, num_clients, text, arrays, history):
    return forget_in_process(config, num_clients, parse_request(text), arrays, "federaser", history)


@pytest.fixture(name="trained")
def trained_fixture(small_config):
    config = small_config(num_server_rounds=10)
    clients, arrays, history = _train(config, 3, window=3)
    return config, clients, arrays, history


def test_recorded_updates_add_up_to_the_trained_model_and_do_not_change_training(trained):
    config, clients, arrays, history = trained
    assert len(history.windows) == 4 and all(set(w) == {0, 1, 2} for w in history.windows)  # 3, 3, 3, 1 rounds
    weights = [int(c.train_mask.sum()) for c in clients]
    model = arrays.to_torch_state_dict()
    for key, value in model.items():
        summed = sum(w[i][key] * weights[i] for w in history.windows for i in range(3)) / sum(weights)
        torch.testing.assert_close(history.initial[key] + summed, value, atol=1e-5, rtol=0)
    plain = train_original(config, 3, history.initial).to_torch_state_dict()
    for key, value in plain.items():
        assert torch.equal(value, model[key])


def test_a_replayed_step_takes_the_staying_clients_recorded_norm(small_config):
    config = small_config(num_server_rounds=4)
    _, arrays, history = _train(config, 2, window=2)
    one_window = UpdateHistory(history.initial, history.window, history.windows[:1])
    replayed = _replay(config, 2, "client:1", arrays, one_window).arrays.to_torch_state_dict()
    differs = []
    for key, recorded in history.windows[0][0].items():
        step = replayed[key] - history.initial[key]
        assert step.norm().item() == pytest.approx(recorded.norm().item(), rel=1e-5)
        differs.append(history.windows[0][1][key].norm().item() != pytest.approx(recorded.norm().item(), rel=1e-3))
    assert any(differs)  # the leaving client's magnitudes differ, so taking them would fail the check above


def test_the_replay_reads_neither_the_forgotten_data_nor_the_leaving_clients_updates(trained):
    config, clients, arrays, history = trained
    num_classes = int(clients[0].num_classes)
    spec = config.federation(3)
    for text, leaving in (("client:2", 2), ("nodes:1:0.5", None)):
        reference = _replay(config, 3, text, arrays, history).arrays.to_torch_state_dict()
        request = parse_request(text, 3, num_classes)
        held = [client_data(spec, i, torch.device("cpu")) for i in range(3)]  # what the clients load
        saved = [(d.x.clone(), d.y.clone()) for d in held]
        try:
            for index, data in enumerate(held):  # scramble every forgotten node where the clients read it
                forget = client_forget_mask(data, index, request, config.seed)
                data.x[forget] = torch.randn_like(data.x[forget])
                data.y[forget] = torch.randint(0, num_classes, data.y[forget].shape)
            tampered = copy.deepcopy(history)
            if leaving is not None:
                for window in tampered.windows:
                    window[leaving] = {k: torch.randn_like(v) for k, v in window[leaving].items()}
            result = _replay(config, 3, text, arrays, tampered).arrays.to_torch_state_dict()
        finally:
            for data, (x, y) in zip(held, saved):
                data.x, data.y = x, y
        for key, value in reference.items():
            assert torch.equal(value, result[key]), (text, key)


def test_clear_errors(small_config, trained):
    config, clients, arrays, history = trained
    with pytest.raises(ValueError, match="window must be at least 1"):
        UpdateHistory(history.initial, 0)
    with pytest.raises(ValueError, match=r"holds no update of client\(s\) \[3\]"):
        check_clients(history, [0, 1, 3])
    with pytest.raises(RuntimeError, match=r"holds no update of client\(s\) \[3\]"):
        _replay(config, 4, "client:0", arrays, history)  # recorded on 3 clients, replayed on 4
    given = {0: arrays.to_torch_state_dict()}  # an original without its recorded updates, as a saved Flower run gives
    with pytest.raises(ValueError, match="federaser replays the clients' recorded training updates"):
        run_request(config, 3, "client:2", ["federaser"], [0], originals=given)
