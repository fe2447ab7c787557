"""Each algorithm's headline model comes from its spec: the global model where the server aggregates a whole
model, the clients' own models where the method is personalised."""

import dataclasses

import pytest

from stamen.contract.algorithms import ALGORITHMS, AlgorithmSpec, Headline, headline_of


def _spec(**fields):
    return AlgorithmSpec("x", "a test spec", "some.server", "some.client", **fields)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, Headline.GLOBAL),
        ({"aggregates": False}, Headline.CLIENTS),
        ({"shares_encoder": True}, Headline.CLIENTS),
        ({"headline": Headline.CLIENTS}, Headline.CLIENTS),
        ({"aggregates": False, "headline": "global"}, Headline.GLOBAL),
    ],
)
def test_the_headline_is_derived_from_aggregation_unless_given(fields, expected):
    spec = _spec(**fields)
    assert spec.headline is expected
    assert dataclasses.replace(spec, help="again").headline is expected  # kept through a re-registration


def test_the_built_ins_headline_what_each_method_is_for():
    personalised = {"local", "fedper", "fedrep", "ditto", "fedpub", "fedgta", "fedproto", "gcfl", "fedstar", "fedlog"}
    for name in ("fedavg", "fedprox", "fedavgm", "fedadam", "krum", "fedsage+", *personalised):
        expected = Headline.CLIENTS if name in personalised else Headline.GLOBAL
        assert ALGORITHMS[name].headline is expected, name
        assert headline_of(name) is expected
    assert headline_of("not-registered") is Headline.GLOBAL and headline_of(None) is Headline.GLOBAL
