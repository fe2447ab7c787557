"""`stamen bench attacks` on a tiny setting, in process: the accuracy table and the label-flip certificate."""

import json
import math

from stamen.cli.main import main

TINY = ["--csbm-nodes", "400", "--clients", "5", "--rounds", "2", "--local-epochs", "1", "--targets", "10"]


def test_bench_attacks_tables(tmp_path, capsys):
    out = tmp_path / "benchmarks"
    argv = ["bench", "attacks", *TINY, "--algorithms", "fedavg,krum,bulyan", "--attacks", "none,label-flip"]
    assert main([*argv, "--flip-fraction", "0.5", "--name", "tiny", "--out", str(out)]) == 0
    record = json.loads((out / "tiny.json").read_text())
    accuracy = {(e["attack"], e["algorithm"]): e for e in record["results"] if e["kind"] == "accuracy"}
    assert set(accuracy) == {(a, b) for a in ("none", "label-flip") for b in ("fedavg", "krum", "bulyan")}
    for attack in ("none", "label-flip"):
        assert accuracy[(attack, "bulyan")]["skipped"] == "needs 4f+3 = 7 clients"  # 5 clients, f = 1
        for algorithm in ("fedavg", "krum"):
            assert 0 <= accuracy[(attack, algorithm)]["final_test_acc_mean"] <= 1
    (certificate,) = [e for e in record["results"] if e["kind"] == "certificate"]
    assert len(certificate["malicious_clients"]) == 1
    assert certificate["budget"] == math.floor(0.5 * certificate["labelled_owned"])
    assert certificate["labelled"] == 20  # 10 per class of the binary task
    if certificate["labelled_owned"]:
        assert 0 <= certificate["certified_ratio"] <= 1
    assert certificate["label_flip_acc"] == {
        name: accuracy[("label-flip", name)]["final_test_acc"][0] for name in ("fedavg", "krum")
    }
    readme = (out / "tiny.md").read_text()
    assert "| algorithm | none | label-flip |" in readme and "| bulyan | skipped (needs 4f+3 = 7 clients)" in readme
    assert "Label flipping beside its exact certificate" in readme


def test_bench_attacks_refuses_bad_input_before_any_run(tmp_path, capsys):
    out = str(tmp_path / "b")
    assert main(["bench", "attacks", *TINY, "--algorithms", "fedavg,nope", "--out", out]) == 2
    assert "--algorithms takes a comma list of" in capsys.readouterr().err
    assert main(["bench", "attacks", *TINY, "--malicious", "5", "--out", out]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("malicious-clients=5 leaves no benign client among 5 clients; choose fewer than 5")
    )
    assert main(["bench", "attacks", *TINY, "--flip-fraction", "0", "--out", out]) == 2
    assert "attack-flip-fraction must lie in (0, 1]" in capsys.readouterr().err
