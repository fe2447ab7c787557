"""Bench records of earlier versions stay readable: the committed ones render, old units resume."""

import json
from pathlib import Path

from stamen.benches.records import final_acc, header
from stamen.cli.commands.bench import BENCHES
from stamen.contract.figures import FINAL_TEST_ACC

ROOT = Path(__file__).resolve().parents[2]


def test_a_unit_kept_by_an_earlier_version_reads_under_the_declared_name():
    assert final_acc({FINAL_TEST_ACC: 0.75, "test_acc": 0.1}) == 0.75
    assert final_acc({"test_acc": 0.5}) == 0.5  # a unit of an earlier version, resumed from its journal
    assert final_acc({"test_acc_mean": 0.5, "test_acc_std": 0.25}, "_std") == 0.25


def test_every_committed_record_of_a_bench_renders_its_table():
    # each committed record, the earlier ones too, still renders through its bench's markdown
    renderers = {b.NAME: b.markdown for b in BENCHES}
    rendered = set()
    for path in sorted((ROOT / "benchmarks").glob("*.json")):
        record = json.loads(path.read_text())
        if record.get("bench") not in renderers:
            continue  # records of other commands (certify.json) or hand-kept studies
        lines = header(record) + renderers[record["bench"]](record)
        assert lines[0] == f"## {record['name']}" and any(line.startswith("| ") for line in lines), path.name
        rendered.add(record["bench"])
    assert {"privacy", "attacks", "scale", "sim", "algorithms", "dpsgd", "deploy"} <= rendered
