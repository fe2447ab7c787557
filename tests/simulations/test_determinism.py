"""Same config and seed, same numbers: every algorithm, run twice, gives identical rows.

The in-process engine runs the same ServerApp and ClientApp as ``flwr run`` (the e2e
tests compare the two engines); here each registered algorithm runs twice in one
process, after other runs, so any draw that depends on the process's history (an
unseeded generator, a cache) shows as a difference.
"""

import json

import pytest

from stamen.cli.main import main as stamen
from stamen.contract.algorithms import ALGORITHMS

SMALL = (
    "num-server-rounds=2 csbm-nodes=300 local-epochs=2 num-malicious-nodes=0 fedlog-warmup-epochs=3 "
    "fedlog-generator-epochs=3 fedsage-gen-epochs=3 fedsage-gen-rounds=2 rep-head-epochs=2"
)
TIMING = ("seconds", "devices", "process")


def _rows(tmp_path, name: str, keys: str) -> list[dict]:
    code = stamen(
        ["run", "--engine", "inprocess", "--quiet", "--clients", "3"]
        + ["-c", f"{SMALL} {keys} output-dir='{tmp_path}' run-name='{name}'"]
    )
    assert code == 0, keys
    rows = [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if not any(t in k for t in TIMING)} for row in rows]


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_algorithm_gives_the_same_numbers_twice(tmp_path, algorithm, capsys):
    task = ALGORITHMS[algorithm].task  # a method made for one task runs on that task's default data
    keys = f"algorithm='{algorithm}'" + (f" task='{task}' dataset='graphs-synth' partitioner='random'" if task else "")
    first = _rows(tmp_path, "first", keys)
    _rows(tmp_path, "between", "algorithm='fedavg'")  # the process's random state moves on in between
    second = _rows(tmp_path, "second", keys)
    assert len(first) >= 2 and first == second


def test_skipping_the_local_evaluation_changes_no_global_figure(tmp_path, capsys):
    keys = "algorithm='fedavg' num-server-rounds=3"
    both = _rows(tmp_path, "both", keys)
    global_only = _rows(tmp_path, "global-only", keys + " local-eval=false")
    assert [row["round"] for row in both] == [row["round"] for row in global_only]
    assert any("val_acc" in row for row in both) and not any("val_acc" in row for row in global_only)
    for full, lean in zip(both, global_only):
        assert "global_val_acc" in lean
        assert _restricted(full, lean) == lean  # the same global figures and training losses, per client too


def _restricted(full: dict, lean: dict) -> dict:
    """``full``'s entries at ``lean``'s keys, nested dicts alike."""
    return {key: _restricted(full[key], value) if isinstance(value, dict) else full[key] for key, value in lean.items()}


def test_local_eval_false_is_refused_where_the_clients_models_are_the_figures(capsys):
    code = stamen(["run", "--engine", "inprocess", "--quiet", "-c", "algorithm='local' local-eval=false"])
    assert code == 2
    assert "local-eval=false leaves algorithm='local' with no figures" in capsys.readouterr().err
