"""Live tracking (stamen/server/tracking.py): TensorBoard events on disk each round while the run goes, an
MLflow run read back from its store, resume continuing it, and no number changed by tracking."""

import json
import os
import struct
from pathlib import Path

import pytest

from stamen.cli.main import main as stamen
from stamen.contract.figures import ROW_TIMINGS
from stamen.contract.tracking import missing_tracker, trackers, translate_retired
from stamen.server import tracking

TIMING_FREE = {"round", "clients", "per_client", "devices", "failed_clients", "final_eval_failed_clients"}


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of the event files in ``folder`` as on disk now, read record by record (TFRecord framing)."""
    from tensorboardX.proto import event_pb2

    found: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data, offset = path.read_bytes(), 0
        while offset + 12 <= len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            event = event_pb2.Event.FromString(data[offset + 12 : offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                found.setdefault(value.tag, []).append((event.step, value.simple_value))
    return found


def _run(tmp_path: Path, name: str, extra: str = "", rounds: int = 3) -> list[dict]:
    config = f"num-server-rounds={rounds} csbm-nodes=300 seed=1 output-dir='{tmp_path}' run-name='{name}' {extra}"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 0
    return [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]


def _figures_only(rows: list[dict]) -> list[dict]:
    """The rows without their wall times and the answering processes' peak memory (both vary run to run)."""
    return [{k: v for k, v in row.items() if k not in ROW_TIMINGS and k != "client_processes"} for row in rows]


def test_tensorboard_events_hold_each_round_while_the_run_goes(tmp_path, monkeypatch):
    seen: list[tuple[int, list[int]]] = []  # (round just recorded, steps of global_test_acc on disk then)
    record = tracking.TensorBoardTracker.record

    def record_and_read(self, row):
        record(self, row)
        on_disk = _scalars(tmp_path / "tb").get("metrics/global_test_acc", [])
        seen.append((row["round"], [step for step, _ in on_disk]))

    monkeypatch.setattr(tracking.TensorBoardTracker, "record", record_and_read)
    rows = _run(tmp_path, "tb", "tracking='tensorboard'")
    # each round's figures were in the file when the next round began
    assert seen and all(steps and steps[-1] == recorded for recorded, steps in seen)
    found = _scalars(tmp_path / "tb")
    expected = [(r["round"], r["global_test_acc"]) for r in rows if "global_test_acc" in r]
    assert [step for step, _ in found["metrics/global_test_acc"]] == [step for step, _ in expected]
    assert [v for _, v in found["metrics/global_test_acc"]] == pytest.approx([v for _, v in expected], abs=1e-6)
    client_0 = [
        (r["round"], r["per_client"]["0"]["test_acc"])
        for r in rows
        if "test_acc" in r.get("per_client", {}).get("0", {})
    ]
    assert client_0 and [s for s, _ in found["metrics/client_0/test_acc"]] == [s for s, _ in client_0]
    assert [v for _, v in found["metrics/client_0/test_acc"]] == pytest.approx([v for _, v in client_0], abs=1e-6)
    # timings apart from the figures: every wall time under timings/, none under metrics/
    row_timings = {k for r in rows for k in r if "seconds" in k}
    assert row_timings and row_timings <= set(ROW_TIMINGS)
    assert {tag.split("/", 1)[1] for tag in found if tag.startswith("timings/")} == row_timings
    assert not [tag for tag in found if tag.startswith("metrics/") and "seconds" in tag]
    assert set(found) <= {f"metrics/{k}" for r in rows for k in r} | {f"timings/{k}" for k in ROW_TIMINGS} | {
        f"metrics/client_{pid}/{k}" for pid in range(3) for k in tracking.CLIENT_FIGURES
    }
    # tracking changes no number: the same run without it has the same figures
    assert _figures_only(_run(tmp_path, "plain")) == _figures_only(rows)


def test_mlflow_run_read_back_and_continued_on_resume(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="tracking='mlflow' needs mlflow: pip install 'stamen[mlflow]'")
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    rows = _run(tmp_path, "ml", "tracking='mlflow'", rounds=2)
    run_dir = tmp_path / "ml"
    status = json.loads((run_dir / "status.json").read_text())
    assert status["mlflow_tracking_uri"] == f"sqlite:///{run_dir / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=status["mlflow_tracking_uri"])
    run = client.get_run(status["mlflow_run_id"])
    assert run.info.status == "FINISHED" and run.info.run_name == "ml"
    assert run.data.params["num-server-rounds"] == "2" and run.data.params["csbm-nodes"] == "300"
    history = client.get_metric_history(run.info.run_id, "global_test_acc")
    expected = [(r["round"], r["global_test_acc"]) for r in rows if "global_test_acc" in r]
    assert [m.step for m in history] == [step for step, _ in expected]
    assert [m.value for m in history] == pytest.approx([value for _, value in expected])
    assert [m.step for m in client.get_metric_history(run.info.run_id, "timings/seconds")] == [1, 2]
    assert "seconds" not in run.data.metrics
    # resumed: the same MLflow run goes on to round 3
    config = f"num-server-rounds=3 csbm-nodes=300 seed=1 tracking='mlflow' resume-from='{run_dir}'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 0
    again = json.loads((run_dir / "status.json").read_text())
    assert again["mlflow_run_id"] == status["mlflow_run_id"]
    resumed = client.get_run(status["mlflow_run_id"])
    assert resumed.info.status == "FINISHED" and resumed.data.tags["stamen.resumed.num-server-rounds"] == "3"
    steps = {m.step for m in client.get_metric_history(run.info.run_id, "global_test_acc")}
    assert steps == {0, 1, 2, 3}


def test_tracking_names_are_checked_in_one_line():
    assert trackers("none") == () and trackers("") == ()
    assert trackers("mlflow, tensorboard") == ("mlflow", "tensorboard")
    with pytest.raises(ValueError, match="'tensorbord' is no tracker; did you mean 'tensorboard'"):
        trackers("tensorbord")
    with pytest.raises(ValueError, match="names a tracker twice"):
        trackers("mlflow,mlflow")
    assert translate_retired({"tensorboard": True}) == {"tracking": "tensorboard"}
    assert translate_retired({"tensorboard": False, "lr": 0.1}) == {"lr": 0.1}
    assert translate_retired({"tensorboard": True, "tracking": "mlflow"}) == {"tracking": "mlflow,tensorboard"}


def test_a_missing_tracker_package_is_named_before_any_work(tmp_path, monkeypatch, capsys):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else find_spec(name, *a))
    assert missing_tracker("tensorboard,mlflow") == (
        "tracking='tensorboard,mlflow': mlflow needs mlflow: pip install 'stamen[mlflow]'"
    )
    config = f"output-dir='{tmp_path}' tracking='mlflow'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "-c", config]) == 2
    assert "pip install 'stamen[mlflow]'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_resumed_run_purges_the_tensorboard_steps_it_runs_again(tmp_path):
    from tensorboardX.proto import event_pb2

    _run(tmp_path, "tbr", "tracking='tensorboard'", rounds=2)
    config = f"num-server-rounds=3 csbm-nodes=300 seed=1 tracking='tensorboard' resume-from='{tmp_path / 'tbr'}'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 0
    first, second = sorted((tmp_path / "tbr").glob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime)
    data = second.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    (purge_length,) = struct.unpack("<Q", data[12 + length + 4 : 12 + length + 4 + 8])
    start = 12 + length + 4 + 12
    purge = event_pb2.Event.FromString(data[start : start + purge_length])
    assert purge.step == 2 and purge.file_version == "brain.Event:2"  # resumed from round 2's checkpoint
    steps = [step for step, _ in _scalars(tmp_path / "tbr")["metrics/global_test_acc"]]
    assert steps[-1] == 3 and steps.count(3) == 1


def test_an_mlflow_store_that_cannot_be_reached_is_dropped_with_a_warning_and_the_run_goes_on(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="tracking='mlflow' needs mlflow: pip install 'stamen[mlflow]'")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "nonsense://x")
    rows = _run(tmp_path, "bad-uri", "tracking='mlflow'", rounds=2)
    assert [row["round"] for row in rows] == [0, 1, 2]
    status = json.loads((tmp_path / "bad-uri" / "status.json").read_text())
    assert status["status"] == "finished" and "mlflow_run_id" not in status
    warned = [line for line in (tmp_path / "bad-uri" / "run.log").read_text().splitlines() if "tracking mlflow" in line]
    assert len(warned) == 1 and "could not start" in warned[0] and "the run goes on without it" in warned[0]


def _experiment_runs(uri: str, name: str):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiments = [e for e in client.search_experiments() if e.name != "Default"]
    assert [e.name for e in experiments] == [name]  # one experiment for the whole group
    return client.search_runs([experiments[0].experiment_id])


def test_a_sweep_is_one_mlflow_experiment_with_a_run_per_unit(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="tracking='mlflow' needs mlflow: pip install 'stamen[mlflow]'")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    argv = ["sweep", "--name", "lrs", "--out", str(tmp_path), "--clients", "3", "--set", "lr=0.01,0.05",
            "--seeds", "0,1", "-c", "num-server-rounds=2 csbm-nodes=300 tracking='mlflow'"]  # fmt: skip
    assert stamen(argv) == 0
    folder = tmp_path / "lrs"
    runs = _experiment_runs(f"sqlite:///{folder / 'mlflow.db'}", "sweep lrs")
    assert len(runs) == 4 and {run.info.status for run in runs} == {"FINISHED"}
    units = {(run.data.params["lr"], run.data.params["seed"]) for run in runs}
    assert units == {("0.01", "0"), ("0.01", "1"), ("0.05", "0"), ("0.05", "1")}  # params: each unit's run config
    for run in runs:
        tags = run.data.tags
        assert tags["stamen.sweep"] == "lrs" and tags["stamen.grid.lr"] == run.data.params["lr"]
        assert tags["stamen.seed"] == run.data.params["seed"] and run.data.params["num-server-rounds"] == "2"
        history = _client(folder).get_metric_history(run.info.run_id, "global_test_acc")
        assert [m.step for m in history] == [0, 1, 2]
    assert not list(folder.glob("*/mlflow.db"))  # no store of each run's own
    assert "STAMEN_TRACKING_GROUP" not in os.environ  # set only while each unit ran


@pytest.mark.slow  # each unit in a process of its own
def test_a_sweep_s_units_side_by_side_share_its_one_experiment(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="tracking='mlflow' needs mlflow: pip install 'stamen[mlflow]'")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    argv = ["sweep", "--name", "two", "--out", str(tmp_path), "--clients", "3", "--set", "lr=0.01,0.05", "--jobs", "2",
            "-c", "num-server-rounds=2 csbm-nodes=300 tracking='mlflow'"]  # fmt: skip
    assert stamen(argv) == 0
    runs = _experiment_runs(f"sqlite:///{tmp_path / 'two' / 'mlflow.db'}", "sweep two")  # the store made once
    assert sorted((run.data.tags["stamen.grid.lr"], run.info.status) for run in runs) == [
        ("0.01", "FINISHED"), ("0.05", "FINISHED")]  # fmt: skip


def _client(folder: Path):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{folder / 'mlflow.db'}")


def test_a_study_is_one_mlflow_experiment_with_a_run_per_trial(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="tracking='mlflow' needs mlflow: pip install 'stamen[mlflow]'")
    pytest.importorskip("optuna", reason="stamen tune needs optuna: pip install 'stamen[tune]'")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    config = "csbm-nodes=300 num-server-rounds=2 tracking='mlflow' seed=4"
    argv = ["tune", "--name", "st", "--out", str(tmp_path), "--trials", "2", "--startup", "1", "--clients", "3",
            "-c", config, "--space", "lr=log:1e-3..1e-1"]  # fmt: skip
    assert stamen(argv) == 0
    runs = _experiment_runs(f"sqlite:///{tmp_path / 'st' / 'mlflow.db'}", "study st")
    assert sorted(run.data.tags["stamen.grid.trial"] for run in runs) == ["0", "1"]
    for run in runs:
        assert run.data.tags["stamen.study"] == "st" and run.data.tags["stamen.seed"] == "4"
        assert float(run.data.tags["stamen.grid.lr"]) == pytest.approx(float(run.data.params["lr"]))
