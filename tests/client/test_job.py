"""A client's private state codec, its seeding and its evaluation shortcut keep every number."""

import pytest
import torch
from flwr.app import Array, ArrayRecord

from stamen.client.device import seed_device
from stamen.client.job import RAW, private_record, private_tensors
from stamen.contract.run_config import RunConfig
from stamen.models import build_model
from stamen.models.training import evaluate


def test_private_state_round_trips_every_dtype_and_shape():
    tensors = {
        "weights": torch.randn(5, 3),
        "index": torch.tensor([0, 2, 7]),
        "step": torch.tensor(4.0),
        "empty": torch.zeros(0, 2),
        "flag": torch.tensor([True, False]),
    }
    record = private_record(tensors)
    assert all(array.stype == RAW for array in record.values())
    back = private_tensors(record)
    assert list(back) == list(tensors)
    for name, tensor in tensors.items():
        assert back[name].dtype == tensor.dtype and back[name].shape == tensor.shape
        assert torch.equal(back[name], tensor)
    back["weights"][0, 0] = 99.0  # the decoded tensors own their memory
    assert private_tensors(record)["weights"][0, 0] == tensors["weights"][0, 0]


def test_private_state_reads_flowers_own_arrays_and_refuses_a_truncated_one():
    assert torch.equal(private_tensors(ArrayRecord({"w": torch.ones(2, 2)}))["w"], torch.ones(2, 2))
    short = ArrayRecord()
    short["w"] = Array(dtype="float32", shape=(3, 3), stype=RAW, data=torch.ones(4).numpy().tobytes())
    with pytest.raises(ValueError, match="4 values for shape"):
        private_tensors(short)


def test_seed_device_draws_what_torch_manual_seed_draws():
    torch.manual_seed(123)
    expected = torch.rand(8), torch.randperm(10)
    torch.rand(3)  # move the stream on
    seed_device(123, torch.device("cpu"))
    assert torch.equal(torch.rand(8), expected[0]) and torch.equal(torch.randperm(10), expected[1])


def test_evaluation_on_equal_graphs_counts_as_two_forward_passes_would(cora_like):
    data = cora_like
    model = build_model("gcn", data.num_features, int(data.num_classes), hidden=8)
    data.full_edge_index = data.edge_index.clone()  # equal, not the same tensor
    data.unseen_mask = torch.zeros(data.num_nodes, dtype=torch.bool)
    data.unseen_mask[:5] = True
    data.missing_mask = ~data.unseen_mask
    evaluation = evaluate(model, data)
    model.eval()
    hits = model(data.x, data.edge_index).argmax(dim=-1) == data.y
    assert evaluation.settings["unseen-node"] == (int(hits[:5].sum()), 5)
    assert evaluation.settings["missing-class"] == (int(hits[5:].sum()), data.num_nodes - 5)
    data.full_edge_index = data.edge_index[:, : data.edge_index.size(1) // 2]  # a different graph: its own pass
    other = evaluate(model, data)
    full_hits = model(data.x, data.full_edge_index).argmax(dim=-1) == data.y
    assert other.settings["unseen-node"] == (int(full_hits[:5].sum()), 5)


@pytest.fixture
def cora_like():
    from stamen.graphs import build_federation

    spec = RunConfig.from_flower({"dataset": "csbm", "csbm-nodes": 300}).federation(2)
    return build_federation(spec).clients[0].clone()
