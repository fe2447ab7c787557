"""Same config and seed, same numbers: every algorithm, run twice, gives identical rows.

The in-process engine runs the same ServerApp and ClientApp as ``flwr run`` (the e2e
tests compare the two engines); here each registered algorithm runs twice in one
process, after other runs, so any draw that depends on the process's history (an
unseeded generator, a cache) shows as a difference.
"""

import json

import pytest

from contract.algorithms import ALGORITHMS
from simulations.cli import main as stamen

SMALL = (
    "num-server-rounds=2 csbm-nodes=300 local-epochs=2 num-malicious-nodes=0 fedlog-warmup-epochs=3 "
    "fedlog-generator-epochs=3 fedsage-gen-epochs=3 fedsage-gen-rounds=3 rep-head-epochs=2"
)
TIMING = ("seconds", "devices")


def _rows(tmp_path, algorithm: str, name: str) -> list[dict]:
    code = stamen(
        ["run", "--engine", "inprocess", "--quiet", "--clients", "3"]
        + ["-c", f"{SMALL} algorithm='{algorithm}' output-dir='{tmp_path}' run-name='{name}'"]
    )
    assert code == 0, algorithm
    rows = [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if not any(t in k for t in TIMING)} for row in rows]


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_algorithm_gives_the_same_numbers_twice(tmp_path, algorithm, capsys):
    first = _rows(tmp_path, algorithm, "first")
    _rows(tmp_path, "fedavg", "between")  # the process's random state moves on in between
    second = _rows(tmp_path, algorithm, "second")
    assert len(first) >= 2 and first == second
