"""`stamen bench dpsgd` on a tiny setting: same batches and epsilon for every variant, well-formed output."""

import json

from stamen.cli.main import main


def test_bench_dpsgd_times_the_same_steps_and_spends_the_same_epsilon(tmp_path, capsys):
    out = tmp_path / "benchmarks"
    argv = ["bench", "dpsgd", "--dataset", "csbm", "--csbm-nodes", "300", "--clients", "2", "--local-epochs", "1"]
    assert main([*argv, "--repeats", "1", "--dp-batch-size", "16", "--name", "tiny", "--out", str(out)]) == 0
    record = json.loads((out / "tiny.json").read_text())
    assert [r["model"] for r in record["results"]] == ["sgc", "mlp"]
    for entry in record["results"]:
        assert entry["steps"] > 0 and entry["training_nodes"] > 0
        assert min(entry["no_dp_seconds"], entry["dp_sgd_seconds"], entry["opacus_seconds"]) > 0
        assert entry["ratio_dp_sgd"] == entry["dp_sgd_seconds"] / entry["no_dp_seconds"]
        assert entry["epsilon_dp_sgd"] == entry["epsilon_opacus"] > 0
    readme = (out / "tiny.md").read_text()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["tiny.json", "tiny.md"]  # no README
    assert "## tiny" in readme and "DP-SGD / no DP" in readme and "| sgc |" in readme
    assert "DP-SGD / no DP" in capsys.readouterr().out


def test_bench_dpsgd_refuses_a_model_it_cannot_train(tmp_path, capsys):
    assert main(["bench", "dpsgd", "--models", "sgc,gcn", "--out", str(tmp_path / "b")]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "--models takes decoupled models (sgc, mlp)" in error[0]
    assert not (tmp_path / "b" / "dpsgd.json").exists()
