"""A client's view after an unlearning request is built once per subgraph and request, and is the view."""

import copy

import torch
from flwr.app import RecordDict

from stamen.client.job import LocalJob
from stamen.client.unlearning import _forget_and_remaining
from stamen.contract.requests import parse_request
from stamen.contract.run_config import RunConfig
from stamen.graphs import build_federation
from stamen.unlearn.requests import client_forget_mask, remaining_view


def _job() -> LocalJob:
    config = RunConfig.from_flower({"csbm-nodes": 300})
    data = build_federation(config.federation(3)).clients[1]
    return LocalJob(config, 1, data, torch.device("cpu"), RecordDict())


def test_the_view_is_built_once_per_subgraph_and_request_and_equals_remaining_view():
    job = _job()
    request = parse_request("nodes:1:0.5", 3, int(job.data.num_classes))
    forget, remaining = _forget_and_remaining(job, request)
    again = _forget_and_remaining(job, request)
    assert again[0] is forget and again[1] is remaining  # kept: its sparse structures are kept too
    expected_forget = client_forget_mask(job.data, 1, request, job.config.seed)
    expected = remaining_view(job.data, 1, request, expected_forget)
    assert torch.equal(forget, expected_forget) and bool(forget.any())
    for key, value in expected:
        assert torch.equal(remaining[key], value) if torch.is_tensor(value) else remaining[key] == value
    other = _forget_and_remaining(job, parse_request("nodes:1:0.25", 3, int(job.data.num_classes)))
    assert other[1] is not remaining and not torch.equal(other[0], forget)


def test_another_subgraph_object_gets_its_own_view():
    job = _job()
    request = parse_request("nodes:1:0.5", 3, int(job.data.num_classes))
    _, remaining = _forget_and_remaining(job, request)
    twin = LocalJob(job.config, 1, copy.copy(job.data), job.device, job.state)
    assert _forget_and_remaining(twin, request)[1] is not remaining
