"""``stamen.audit``: the privacy audit that ``stamen audit privacy`` runs, with its figures, as objects."""

import json

import pytest

import stamen
from stamen.cli.main import main as cli

# two audited runs (no DP, DP-SGD at epsilon 4) of a tiny federation: 300 nodes, 3 clients, 1 round
ARGV = ["audit", "privacy", "--csbm-nodes", "300", "--rounds", "1", "--canaries-per-client", "10"]
ARGV += ["--local-epochs", "2", "--dp-sgd-epsilons", "4", "--client-dp-epsilons", "", "--seed", "2"]


def _untimed(results):
    return [{key: value for key, value in result.items() if key != "seconds"} for result in results]


def test_an_audit_from_python_gives_the_commands_figures(tmp_path, capsys):
    assert cli([*ARGV, "--out", str(tmp_path / "cli.json")]) == 0
    capsys.readouterr()
    report = stamen.audit(
        csbm_nodes=300,
        rounds=1,
        canaries_per_client=10,
        local_epochs=2,
        dp_sgd_epsilons=[4],
        client_dp_epsilons=[],
        seed=2,
        out=tmp_path / "api.json",
    )
    assert capsys.readouterr().out == ""  # the API prints nothing
    assert [r.privacy for r in report.results] == ["none", "dp-sgd"]
    assert report.results[0].accountant_epsilon is None and report.results[1].accountant_epsilon > 0
    assert report.output == tmp_path / "api.json" and report.confidence == 0.95
    written = json.loads((tmp_path / "api.json").read_text())
    command = json.loads((tmp_path / "cli.json").read_text())
    assert _untimed(written["results"]) == _untimed(command["results"])  # the same seed: the same figures
    assert _untimed([r.__dict__ for r in report.results]) == _untimed(command["results"])
    assert report.violated == [
        r for r in report.results if r.accountant_epsilon is not None and r.lower_bound > r.accountant_epsilon
    ]


@pytest.mark.parametrize(
    "options,message",
    [
        ({"round": 2}, "stamen.audit has no option 'round'; did you mean 'rounds'?"),
        ({"clients": "3"}, "clients must be a whole number, got '3'"),
        ({"dp_sgd_epsilons": "1,4"}, "dp_sgd_epsilons must be a list of numbers, e.g. [1, 4, 16]; got '1,4'"),
        ({"dp_sgd_epsilons": [0]}, "dp-sgd-epsilons=[0]: every epsilon must be a finite number > 0"),
        ({"guess_fraction": 2.0}, "--guess-fraction=2.0 must lie in (0, 1]"),
    ],
)
def test_bad_audit_options_are_one_line_before_any_run(options, message, tmp_path):
    with pytest.raises(ValueError) as refusal:
        stamen.audit(out=tmp_path / "a.json", **options)
    assert str(refusal.value) == message
    assert list(tmp_path.iterdir()) == []  # nothing written
