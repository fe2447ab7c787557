"""One name per figure: what a run writes is declared in :mod:`stamen.contract.figures`, and no module
spells a declared figure's name itself."""

import io
import json
import tokenize
from pathlib import Path

import pytest

from stamen.cli.main import main as stamen
from stamen.contract import figures as f
from stamen.contract import protocol as p

ROOT = Path(__file__).resolve().parents[2]
RUNS = {
    "client-dp": "algorithm='fedavg' privacy='client-dp' noise-multiplier=0.5",
    "fedlog": "algorithm='fedlog' fedlog-warmup-epochs=2 fedlog-generator-epochs=2",
    "dp-sgd": "algorithm='local' privacy='dp-sgd' model='sgc'",
    "link-prediction": "task='link-prediction'",
    "gcfl": "algorithm='gcfl' task='graph-classification' dataset='graphs-synth' partitioner='random' "
    "gcfl-eps1=1e9 gcfl-eps2=0 gcfl-warmup-rounds=0",  # its one cluster of 3 splits in round 2
}
SETTING_ACCS = {f.setting_acc(s, g) for s in p.SETTINGS for g in (True, False)}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Rows and summaries of small in-process runs that between them write every kind of figure."""
    out = tmp_path_factory.mktemp("runs")
    found = {}
    for name, keys in RUNS.items():
        argv = ["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c"]
        assert stamen([*argv, f"num-server-rounds=2 csbm-nodes=300 {keys} output-dir='{out}' run-name='{name}'"]) == 0
        rows = [json.loads(line) for line in (out / name / "metrics.jsonl").read_text().splitlines()]
        found[name] = rows, json.loads((out / name / "summary.json").read_text())
    return found


def test_every_key_a_run_writes_is_declared(written):
    for name, (rows, summary) in written.items():
        for row in rows:
            assert set(row) <= set(f.ROW_KEYS) | SETTING_ACCS, name
            for figures in row.get("per_client", {}).values():
                assert set(figures) <= set(f.CLIENT_KEYS), name
        assert set(summary) <= set(f.SUMMARY_KEYS), name
        assert set(summary["final"]) == set(summary["best"]) <= {key for key, _ in f.SUMMARY_FIGURES}
        other = f.ACCURACY_FIGURES if name == "link-prediction" else f.LINK_TASK_FIGURES
        assert not (set(summary["final"]) - {f.TRAIN_LOSS}) & set(other), name  # no other task's keys
    every_row_key = {key for rows, _ in written.values() for row in rows for key in row}
    assert {f.CLIENT_DP_EPSILON, "epsilon_max", f.setting_acc("missing-class", True)} <= every_row_key
    assert {f.CLUSTERS, f.CLUSTER_SPLITS} <= every_row_key and {f.CLUSTERS, f.CLUSTER_SPLITS} <= set(written["gcfl"][1])


# Row and summary figures, and the benches' (the attack, privacy and scale benches' records called
# their final global accuracy "test_acc" before FINAL_TEST_ACC was declared).
SPELLED_ONCE = {
    f.GLOBAL_TEST_ACC,
    f.TEST_ACC,
    f.GLOBAL_VAL_ACC,
    f.VAL_ACC,
    f.TRAIN_LOSS,
    f.CLIENT_DP_EPSILON,
    f.FINAL_TEST_ACC,
    f.TEST_ACC_AT_BEST_VAL,
    "best_val_test_acc",  # the sweep's old name of TEST_ACC_AT_BEST_VAL
}


def _spelled(path: Path) -> list[str]:
    """Where ``path`` writes a declared figure's name as a plain string literal."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [
        f"{path.name}:{t.start[0]}: {t.string}"
        for t in tokens
        if t.type == tokenize.STRING and t.string[1:-1] in SPELLED_ONCE and t.string[0] == t.string[-1]
    ]


def test_no_module_spells_a_figure_name_itself():
    contract = ROOT / "stamen" / "contract"  # where the names are spelled, once
    paths = [path for path in sorted((ROOT / "stamen").rglob("*.py")) if contract not in path.parents]
    found = [hit for path in paths for hit in _spelled(path)]
    assert found == []


def test_the_scan_finds_a_spelled_name(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('row = {"global_test_acc": 1.0}\nkey = \'train_loss\'\nlabel = "global_test_acc of x"\n')
    assert len(_spelled(sample)) == 2
