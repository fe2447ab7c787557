"""Requests in the run config: one parser (stamen.contract.requests) for the shape at config time."""

import pytest

from stamen.contract.requests import Request, is_request, parse_request
from stamen.contract.run_config import UNLEARN_METHODS, RunConfig


@pytest.mark.parametrize("text", ["class:2", "client:0", "nodes:3:0.5", "nodes:1:.25", ""])
def test_run_config_accepts_requests(text):
    assert RunConfig.from_flower({"unlearn-request": text}).unlearn_request == text


@pytest.mark.parametrize("text", ["class", "class:x", "nodes:1", "client:-1", "forget:1"])
def test_run_config_rejects_malformed_requests(text):
    with pytest.raises(ValueError, match="unlearn-request must be"):
        RunConfig.from_flower({"unlearn-request": text})
    with pytest.raises(ValueError, match="unlearn-method must be"):
        RunConfig.from_flower({"unlearn-method": "sisa"})


def test_shape_only_parsing_at_config_time_and_ranges_once_the_federation_is_known():
    assert parse_request("nodes:7:0.5") == Request("nodes", client=7, fraction=0.5)
    assert is_request("") and is_request("nodes:0:1.5") and not is_request("nodes:0:x")  # range: checked later
    with pytest.raises(ValueError, match="client 7 is out of range 0..4"):
        parse_request("nodes:7:0.5", 5, 3)
    assert Request("class", label=2).holders(3) == [0, 1, 2] and Request("client", client=1).holders(3) == [1]
    assert Request("client", client=1).leaving() == 1 and Request("nodes", client=1, fraction=0.5).leaving() is None


def test_unlearn_method_choices_are_the_registry_s():
    from stamen.server.unlearning import METHODS

    assert UNLEARN_METHODS == tuple(METHODS)
    for name in METHODS:
        assert RunConfig.from_flower({"unlearn-method": name}).unlearn_method == name
