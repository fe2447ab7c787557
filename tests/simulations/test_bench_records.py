"""Bench records of earlier versions stay readable: the committed ones render, old units resume."""

import json
import shutil
from pathlib import Path

from stamen.contract.figures import FINAL_TEST_ACC
from stamen.simulations.benches.records import final_acc, write_readme
from stamen.simulations.commands.bench import BENCHES

ROOT = Path(__file__).resolve().parents[2]


def test_a_unit_kept_by_an_earlier_version_reads_under_the_declared_name():
    assert final_acc({FINAL_TEST_ACC: 0.75, "test_acc": 0.1}) == 0.75
    assert final_acc({"test_acc": 0.5}) == 0.5  # an earlier version's unit, resumed from its journal
    assert final_acc({"test_acc_mean": 0.5, "test_acc_std": 0.25}, "_std") == 0.25


def test_every_committed_record_renders_into_the_readme(tmp_path):
    # `stamen bench ... --out benchmarks` renders every record in the folder again, the earlier ones too
    for path in (ROOT / "benchmarks").glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    write_readme(tmp_path, {b.NAME: b.markdown for b in BENCHES})
    readme = (tmp_path / "README.md").read_text()
    for bench in ("privacy", "attacks", "scale"):
        records = [p for p in tmp_path.glob("*.json") if json.loads(p.read_text()).get("bench") == bench]
        assert records, bench  # the committed records the earlier names are read from
    assert readme.count("\n| ") > 20
