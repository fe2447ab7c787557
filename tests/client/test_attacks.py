"""Malicious clients (stamen/client/attacks.py): exact, seeded attacks through the ClientApp's training handler."""

import math

import numpy as np
import pytest
import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, RecordDict

from stamen.client.attacks import check_attack, flipped_labels, malicious_partitions
from stamen.client.job import client_data
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.simulations.inprocess import InProcessGrid, task_identity

RUN = {"csbm-nodes": 600, "csbm-classes": 3, "local-epochs": 2, "min-clients": 2}
CLIENTS = 5


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


def _config(**values) -> RunConfig:
    return RunConfig.from_flower({**RUN, **values})


def _train_reply(config: RunConfig, partition: int, server_round: int = 2) -> tuple[dict, dict]:
    """The weights sent (the seeded model, moved a little) and the weights partition ``partition`` replies."""
    grid = InProcessGrid(config, CLIENTS)
    model = _seeded_model(config)
    generator = torch.Generator().manual_seed(123)
    sent = {
        k: v + 0.01 * torch.randn(v.shape, generator=generator) if v.is_floating_point() else v
        for k, v in model.items()
    }
    content = RecordDict({p.ARRAYS: ArrayRecord(sent), p.CONFIG: ConfigRecord({p.SERVER_ROUND: server_round})})
    message = Message(
        content=content, dst_node_id=InProcessGrid.NODE_OFFSET + partition, message_type=MessageType.TRAIN
    )
    (reply,) = grid.send_and_receive([message])
    assert not reply.has_error(), reply.error
    return sent, reply.content[p.ARRAYS].to_torch_state_dict()


def _seeded_model(config: RunConfig) -> dict:
    from stamen.client.job import LocalJob

    spec = config.federation(CLIENTS)
    data = client_data(spec, 0, torch.device("cpu"))
    job = LocalJob(config, 0, data, torch.device("cpu"), RecordDict())
    return {k: v.clone() for k, v in job.model().state_dict().items()}


def test_label_flip_changes_exactly_the_seeded_share_of_training_labels():
    spec = _config().federation(CLIENTS)
    data = client_data(spec, 2, torch.device("cpu"))
    clean = data.y.clone()
    train = int(data.train_mask.sum())
    flipped = flipped_labels(data.y, data.train_mask, int(data.num_classes), 0.3, seed=0, partition_id=2)
    changed = flipped != clean
    assert int(changed.sum()) == math.floor(0.3 * train)
    assert not changed[~data.train_mask].any()  # validation and test labels stay clean
    assert ((flipped >= 0) & (flipped < int(data.num_classes))).all()
    assert torch.equal(data.y, clean)  # the cached subgraph is not touched
    again = flipped_labels(data.y, data.train_mask, int(data.num_classes), 0.3, seed=0, partition_id=2)
    assert torch.equal(again, flipped)  # seeded: the same flips every round, every run
    other = flipped_labels(data.y, data.train_mask, int(data.num_classes), 0.3, seed=1, partition_id=2)
    assert not torch.equal(other, flipped)
    everything = flipped_labels(data.y, data.train_mask, int(data.num_classes), 1.0, seed=0, partition_id=2)
    assert int((everything != clean).sum()) == train


def test_sign_flip_reply_is_the_formula_and_benign_clients_are_untouched():
    clean = _config()
    attacked = _config(attack="sign-flip", **{"malicious-clients": "1,", "attack-scale": 4.0})
    sent, honest = _train_reply(clean, 1)
    _, forged = _train_reply(attacked, 1)
    assert forged.keys() == honest.keys()
    for key, value in honest.items():
        assert torch.allclose(forged[key], sent[key] - 4.0 * (value - sent[key]), atol=1e-6)
        assert not torch.allclose(forged[key], value)
    assert _same(_train_reply(clean, 0)[1], _train_reply(attacked, 0)[1])  # partition 0 is benign


def test_gaussian_reply_is_seeded_noise_around_the_global_model():
    config = _config(attack="gaussian", **{"malicious-clients": "3,", "attack-std": 0.5})
    sent, forged = _train_reply(config, 3)
    noise = torch.cat([(forged[k] - sent[k]).flatten() for k in sent if sent[k].is_floating_point()])
    assert noise.numel() > 1000
    assert abs(float(noise.mean())) < 0.05 and float(noise.std()) == pytest.approx(0.5, rel=0.1)
    assert _same(forged, _train_reply(config, 3)[1])  # the same numbers every run
    assert not _same(forged, _train_reply(config, 3, server_round=3)[1])  # fresh noise each round


def test_label_flip_client_trains_on_its_poisoned_labels():
    clean = _config()
    attacked = _config(attack="label-flip", **{"malicious-clients": "2,"})
    assert not _same(_train_reply(clean, 2)[1], _train_reply(attacked, 2)[1])
    assert _same(_train_reply(clean, 4)[1], _train_reply(attacked, 4)[1])


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_malicious_clients_by_count_or_ids():
    assert malicious_partitions("", 5, 0) == frozenset()
    assert malicious_partitions("0,3", 5, 0) == {0, 3}
    assert malicious_partitions("4,", 5, 0) == {4}
    chosen = malicious_partitions("2", 10, 7)
    assert len(chosen) == 2 and chosen <= set(range(10))
    assert malicious_partitions("2", 10, 7) == chosen  # seeded
    assert {malicious_partitions("2", 10, seed) for seed in range(6)} != {chosen}
    assert check_attack(_config(attack="sign-flip", **{"malicious-clients": "1,"}), 5) == {1}


@pytest.mark.parametrize(
    ("text", "clients", "message"),
    [
        ("5", 5, "malicious-clients=5 leaves no benign client among 5 clients; choose fewer than 5"),
        ("0,7", 5, "malicious-clients names partition 7, but the clients are 0..4; give ids in that range"),
        ("0,1,2", 3, "malicious-clients='0,1,2' names all 3 clients; leave at least one benign client"),
    ],
)
def test_malicious_clients_out_of_range_fail_in_one_line(text, clients, message):
    with pytest.raises(ValueError) as error:
        malicious_partitions(text, clients, 0)
    assert str(error.value) == message


@pytest.mark.parametrize("text", ["x", "0", "-1", "1,1", "1.5", ",", "1;2"])
def test_malformed_malicious_clients_are_refused_by_the_config(text):
    with pytest.raises(ValueError, match="malicious-clients must be a count like '2', partition ids like"):
        _config(attack="sign-flip", **{"malicious-clients": text})


def test_attack_rules():
    with pytest.raises(ValueError, match="an attack needs both keys; set malicious-clients"):
        _config(attack="gaussian")
    with pytest.raises(ValueError, match="an attack needs both keys; set attack"):
        _config(**{"malicious-clients": "2"})
    with pytest.raises(ValueError, match="attack='sign-flip' needs an algorithm that aggregates"):
        _config(attack="sign-flip", algorithm="local", **{"malicious-clients": "2"})
    with pytest.raises(ValueError, match="unknown attack 'signflip'"):
        _config(attack="signflip", **{"malicious-clients": "2"})
    assert np.isclose(_config(attack="sign-flip", **{"malicious-clients": "2"}).attack_scale, 10.0)
