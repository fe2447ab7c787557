"""``stamen bench deploy --clients 3,10,20``: the deployment's cost against the node count (no deployment started)."""

import pytest

from stamen.benches import deploy
from stamen.benches.sim import per_round_breakdown


def _entry(nodes: int, set_up: float, per_round: float, peak: float) -> dict:
    figures = {"first_round_seconds": 2.0, "seconds": per_round, "exchange_seconds": per_round, "engine_seconds": 1.0}
    deployment = {"set_up_seconds": set_up, "per_round": figures, "peak_memory_gb": peak}
    return {"nodes": nodes, "deployment": deployment}


def test_growth_fits_the_cost_of_one_more_supernode():
    # set-up 5 s + 2 s a node, a round 1 s + 0.1 s a node, 0.3 GB a node: the slopes come back as such
    record = {"results": [_entry(n, 5 + 2 * n, 1 + 0.1 * n, 0.3 * n) for n in (20, 3, 10)]}
    table, fits = deploy.growth(record)
    assert [row[0] for row in table] == ["3", "10", "20", "per node (slope)"]  # by node count, then the slopes
    intercept, slope = fits["set-up s"]
    assert abs(slope - 2.0) < 1e-9 and abs(intercept - 5.0) < 1e-9
    assert abs(fits["s / later round"][1] - 0.1) < 1e-9 and abs(fits["peak GB"][1] - 0.3) < 1e-9
    assert abs(fits["engine s"][1]) < 1e-9  # a flat figure has no slope
    assert "2.00 s of set-up" in deploy._growth_sentence(record, fits)


def test_one_count_has_no_growth_line():
    table, fits = deploy.growth({"results": [_entry(3, 11.0, 1.3, 0.9)]})
    assert len(table) == 1 and fits == {}


def test_a_run_without_rounds_is_named_as_such():
    """A deployed run stopped before its first round has nothing to time: the bench says so, not a statistics error."""
    with pytest.raises(RuntimeError, match="recorded no round"):
        per_round_breakdown([], actors=3)
