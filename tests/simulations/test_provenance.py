"""Every JSON output says where it came from: version, commit, packages, date, command, seeds."""

import json

import pytest

from simulations.cli import main as stamen

KEYS = {"stamen", "commit", "date", "command", "packages", "seeds", "python", "platform"}


def _check(record: dict, seeds: list[int]) -> None:
    provenance = record["provenance"]
    assert KEYS <= set(provenance), sorted(provenance)
    assert provenance["seeds"] == seeds and provenance["packages"]["flwr"] and provenance["packages"]["torch"]
    assert provenance["stamen"] and provenance["date"][:2] == "20"


def test_run_certify_and_unlearn_json_carry_provenance(tmp_path, capsys):
    config = f"num-server-rounds=2 csbm-nodes=300 seed=3 output-dir='{tmp_path}' run-name='r'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 0
    for name in ("status.json", "summary.json"):
        _check(json.loads((tmp_path / "r" / name).read_text()), [3])
    certify = ["certify", "--dataset", "csbm-paper", "--csbm-nodes", "40", "--labeled-per-class", "4", "--targets", "4"]
    assert stamen([*certify, "--budgets", "1", "--out", str(tmp_path / "cert"), "--seed", "1"]) == 0
    _check(json.loads((tmp_path / "cert" / "certificate.json").read_text()), [1])
    assert stamen(["unlearn", str(tmp_path / "r"), "--request", "class:1", "--methods", "wash"]) == 0
    (result,) = (tmp_path / "r" / "unlearn").glob("*/result.json")
    _check(json.loads(result.read_text()), [3])


def _scalars(folder) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of the event files in ``folder``, read record by record (TFRecord framing)."""
    import struct

    from tensorboardX.proto import event_pb2

    found: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, offset = path.read_bytes(), 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            event = event_pb2.Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                found.setdefault(value.tag, []).append((event.step, value.simple_value))
    return found


def test_tensorboard_event_files_hold_the_runs_rows(tmp_path):
    config = f"num-server-rounds=3 csbm-nodes=300 output-dir='{tmp_path}' run-name='tb' tensorboard=true"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 0
    rows = [json.loads(line) for line in (tmp_path / "tb" / "metrics.jsonl").read_text().splitlines()]
    found = _scalars(tmp_path / "tb")
    expected = [(r["round"], r["global_test_acc"]) for r in rows if "global_test_acc" in r]
    assert [step for step, _ in found["run/global_test_acc"]] == [step for step, _ in expected]
    assert [value for _, value in found["run/global_test_acc"]] == pytest.approx([v for _, v in expected], abs=1e-6)
    assert len(found["client/0/test_acc"]) == 3
