"""One-run privacy auditing: the bound's arithmetic by hand, and canaries that a non-private run gives away."""

import json
import logging
import math

import numpy as np
import pytest

from stamen.cli.main import main
from stamen.contract.run_config import RunConfig
from stamen.experiments.privacy_audit import audit_run
from stamen.unlearn.privacy_audit import Guesses, epsilon_lower_bound, guess_membership, p_value


def test_all_guesses_right_without_delta_is_the_binomial_closed_form():
    # delta = 0 and v = r: the bound is p^r = 0.05, p = e^eps / (1 + e^eps), so eps = log(p / (1 - p)).
    p = 0.05 ** (1 / 10)
    assert epsilon_lower_bound(Guesses(10, 10, 10), delta=0.0) == pytest.approx(math.log(p / (1 - p)), abs=1e-5)


def test_p_value_with_delta_by_hand():
    # m = r = v = 2, eps = 0 (p = 1/2): beta = 1/4; alpha = max(P[Bin=1] / 1, (P[Bin=1] + P[Bin=0]) / 2)
    # = max(1/2, 3/8) = 1/2; the bound is beta + 2 m delta alpha = 1/4 + 2 delta.
    assert p_value(Guesses(2, 2, 2), 0.0, 1e-3) == pytest.approx(0.25 + 2e-3)
    # eps = log 3 (p = 3/4): beta = 9/16, alpha = max(6/16, 7/32) = 3/8.
    assert p_value(Guesses(2, 2, 2), math.log(3), 1e-3) == pytest.approx(9 / 16 + 4e-3 * 3 / 8)


def test_chance_level_guesses_rule_out_nothing():
    assert epsilon_lower_bound(Guesses(100, 50, 25), 1e-5) == 0.0
    assert epsilon_lower_bound(Guesses(100, 50, 32), 1e-5) > 0.0  # 32/50: beyond chance at 95 %
    assert epsilon_lower_bound(Guesses(100, 50, 40), 1e-5) > epsilon_lower_bound(Guesses(100, 50, 32), 1e-5)


def test_guesses_take_the_top_and_bottom_scores():
    scores = np.array([0.9, 0.1, 0.8, 0.2, 0.5])
    included = np.array([True, False, False, False, True])
    # in: 0.9 (right), 0.8 (wrong); out: 0.1 (right), 0.2 (right)
    assert guess_membership(scores, included, 2, 2) == Guesses(5, 4, 3)
    with pytest.raises(ValueError, match="add up to at most 5 canaries"):
        guess_membership(scores, included, 3, 3)


TINY = {"csbm-nodes": 600, "num-server-rounds": 4, "local-epochs": 10, "lr": 0.05, "model": "sgc", "dropout": 0.0}
TINY |= {"weight-decay": 0.0, "min-clients": 1, "device": "cpu", "seed": 0}


def test_a_non_private_run_gives_strong_canaries_away():
    result = audit_run(RunConfig.from_flower(TINY), 3, 30, 3.0, 0.95, 0.5)
    assert result.accountant_epsilon is None and result.correct > 0.8 * result.guesses
    assert result.lower_bound > 0.5


def test_a_private_run_stays_below_its_accountant():
    config = RunConfig.from_flower({**TINY, "privacy": "dp-sgd", "target-epsilon": 2.0})
    result = audit_run(config, 3, 30, 3.0, 0.95, 0.5)
    assert result.accountant_epsilon == pytest.approx(2.0, abs=0.05)
    assert 0.0 <= result.lower_bound < result.accountant_epsilon


def test_the_command_writes_its_table_and_json_and_refuses_bad_input(tmp_path, capsys):
    output = tmp_path / "audit.json"
    argv = ["audit", "privacy", "--csbm-nodes", "600", "--rounds", "2", "--canaries-per-client", "20"]
    argv += ["--dp-sgd-epsilons", "4", "--client-dp-epsilons", "4", "--out", str(output)]
    records: list[logging.LogRecord] = []
    spy = logging.Handler()
    spy.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("flwr").addHandler(spy)
    try:
        assert main(argv) == 0
    finally:
        logging.getLogger("flwr").removeHandler(spy)
    assert not [r.getMessage() for r in records if r.levelno < logging.WARNING]  # no Flower INFO lines
    report = json.loads(output.read_text())
    assert [r["privacy"] for r in report["results"]] == ["none", "dp-sgd", "client-dp"]
    assert "empirical eps >=" in capsys.readouterr().out
    assert main(argv) == 2  # the file exists now: never overwritten
    assert "exists" in capsys.readouterr().err
    assert main(["audit", "privacy", "--dp-sgd-epsilons", "x"]) == 2
    assert main(["audit", "privacy", "--canaries-per-client", "100000", "--rounds", "1"]) == 2
    assert "lower it to at most" in capsys.readouterr().err
