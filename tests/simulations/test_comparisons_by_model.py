"""Comparisons show what each method is for: the global model and the clients' own (personalised) models side by
side in sweeps and comparisons, and a setting under which an algorithm is another said once."""

import json

import pytest

import stamen
from stamen.cli.main import main as cli

SMALL = {"csbm-nodes": 300, "num-server-rounds": 3}
FEDPROX_NOTE = (
    "fedprox with one local step a round (local-epochs=1, full-batch: no graph sets, no dp-sgd) is fedavg: the "
    "proximal term's gradient is zero at the received weights, where that step is taken"
)


def _final(run_dir):
    return json.loads((run_dir / "summary.json").read_text())["final"]


def test_a_sweep_of_fedavg_and_ditto_shows_both_models(tmp_path, capsys):
    sweep = stamen.sweep(SMALL, grid={"algorithm": ["fedavg", "ditto"]}, clients=3, out=tmp_path, name="s")
    by_algorithm = {row["algorithm"]: row for row in sweep.rows}
    for run in sweep.runs():
        final = _final(run.dir)
        row = by_algorithm[run.config["algorithm"]]
        assert row["final_global_test_mean"] == final["global_test_acc"]
        assert row["final_clients_test_mean"] == final["test_acc"]
    ditto, fedavg = by_algorithm["ditto"], by_algorithm["fedavg"]
    assert abs(ditto["final_clients_test_mean"] - ditto["final_global_test_mean"]) > 0.01  # personal models differ
    assert (fedavg["headline"], ditto["headline"]) == ("global", "clients")  # from each algorithm's spec
    assert fedavg["final_test_acc_mean"] == fedavg["final_global_test_mean"]
    assert ditto["final_test_acc_mean"] == ditto["final_clients_test_mean"]
    capsys.readouterr()
    assert cli(["compare", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "global model" in out and "clients' models" in out
    for name, model in (("fedavg", "final_global_test"), ("ditto", "final_clients_test")):  # the headline marked
        (line,) = [line for line in out.splitlines() if f"algorithm={name}" in line]
        cells = [cell.strip() for cell in line.split("│")]
        marked = [cell for cell in cells if cell.endswith(" *")]
        assert marked == [f"{by_algorithm[name][model + '_mean']:.4f} ± {by_algorithm[name][model + '_std']:.4f} *"]
    header = next(line for line in (tmp_path / "s" / "sweep.csv").read_text().splitlines())
    assert "final_global_test_mean" in header and "final_clients_test_mean" in header


def test_fedprox_at_one_local_step_says_it_is_fedavg_once(tmp_path, capsys):
    one = stamen.run({**SMALL, "algorithm": "fedprox"}, clients=3, out=tmp_path, run_name="one")
    assert one.summary["notes"] == [FEDPROX_NOTE]
    two = stamen.run({**SMALL, "algorithm": "fedprox", "local-epochs": 2}, clients=3, out=tmp_path, run_name="two")
    assert "notes" not in two.summary
    fedavg = stamen.run(SMALL, clients=3, out=tmp_path, run_name="fedavg")
    assert [r["train_loss"] for r in one.rows[1:]] == [r["train_loss"] for r in fedavg.rows[1:]]  # the note's claim
    capsys.readouterr()
    assert cli(["compare", str(one.dir), str(two.dir), str(one.dir)]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert notes == [f"note: one, one: {FEDPROX_NOTE}"]


def test_fedprox_on_graph_sets_at_one_local_epoch_is_not_called_fedavg(tmp_path):
    """A local epoch over graph sets is a step per mini-batch: past the first, the proximal term pulls."""
    graphs = {"task": "graph-classification", "num-server-rounds": 2, "graph-batch-size": 8}  # several batches a client
    fedprox = stamen.run({**graphs, "algorithm": "fedprox", "proximal-mu": 1.0}, clients=3, out=tmp_path, run_name="p")
    fedavg = stamen.run(graphs, clients=3, out=tmp_path, run_name="a")
    assert "notes" not in fedprox.summary
    assert fedprox.rows[-1]["train_loss"] != fedavg.rows[-1]["train_loss"]  # what the note would have denied


@pytest.mark.parametrize(("mu", "note"), [(0.0, "fedprox with proximal-mu=0 is fedavg: its proximal term is zero")])
def test_fedprox_without_a_proximal_term_says_so(mu, note):
    from stamen.contract.equivalences import config_notes
    from stamen.contract.run_config import RunConfig

    assert config_notes(RunConfig.from_flower({"algorithm": "fedprox", "proximal-mu": mu, "local-epochs": 3})) == [note]
    assert config_notes(RunConfig.from_flower({"algorithm": "fedprox", "proximal-mu": 0.01, "local-epochs": 3})) == []
    assert config_notes(RunConfig(algorithm="fedavg")) == []
