"""The run directory: names and folders from user input, overwrite, resume, status."""

import json
import os

import pytest

from stamen.common.file_writes import atomic_write
from stamen.contract.run_config import RunConfig
from stamen.server.checkpoint import load_checkpoint
from stamen.server.rundir import RunDirectory, RunStatus, check_output_dir, check_run_name, run_token

RUN = {"num-server-rounds": 4, "csbm-nodes": 600, "local-epochs": 3, "min-clients": 2}


def _created(config: RunConfig) -> RunDirectory:
    run_dir = RunDirectory.plan(config)
    run_dir.create(config)
    return run_dir


def test_a_resumed_run_must_train_the_same_thing(tmp_path):
    config = RunConfig.from_flower({**RUN, "output-dir": str(tmp_path), "run-name": "r"})
    run_dir = _created(config)
    for row in ({"round": 0}, {"round": 1}, {"round": 2}):
        run_dir.append_row(row)
    with pytest.raises(ValueError, match=r"differs .* in \['lr'\]"):
        run_dir.reopen(RunConfig.from_flower({**RUN, "lr": 0.5}), 2)
    assert [row["round"] for row in run_dir.rows()] == [0, 1, 2]  # a refused resume changes nothing
    kept = run_dir.reopen(RunConfig.from_flower({**RUN, "num-server-rounds": 9, "resume-from": "x"}), 2)
    assert [row["round"] for row in kept] == [0, 1]  # round 2 is run again ...
    assert [row["round"] for row in run_dir.rows()] == [0, 1, 2]  # ... but its row stays until the new one
    run_dir.replace_rows(kept, '{"round": 2, "again": true}\n')
    assert run_dir.rows() == [{"round": 0}, {"round": 1}, {"round": 2, "again": True}]
    with pytest.raises(FileNotFoundError, match="no checkpoint.npz"):
        load_checkpoint(run_dir.path)


def test_existing_run_directory_is_never_reused(tmp_path):
    config = RunConfig(output_dir=str(tmp_path), run_name="first")
    run_dir = _created(config).path
    (run_dir / "metrics.jsonl").write_text('{"round": 0}\n')
    with pytest.raises(FileExistsError, match="overwrite=true"):
        RunDirectory.plan(config)
    assert (run_dir / "metrics.jsonl").read_text() == '{"round": 0}\n'
    generated = RunConfig(output_dir=str(tmp_path))
    assert _created(generated).path != _created(generated).path


@pytest.mark.parametrize("name", ["a/..", "..", ".", "../x", "/etc", "a/b", ".hidden", "-rf", "a\0b", "x" * 300])
def test_run_name_is_one_plain_folder_name(name):
    with pytest.raises(ValueError, match="one plain folder name"):
        check_run_name(name)


def test_output_dir_must_be_a_writable_folder(tmp_path):
    (tmp_path / "file").write_text("mine")
    with pytest.raises(ValueError, match="is a file"):
        check_output_dir(str(tmp_path / "file"))
    with pytest.raises(ValueError, match="lies under .* a file"):
        check_output_dir(str(tmp_path / "file" / "runs"))
    assert check_output_dir(str(tmp_path / "new" / "runs")) == tmp_path / "new" / "runs"
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_overwrite_replaces_only_a_stamen_run(tmp_path):
    config = RunConfig(output_dir=str(tmp_path), run_name="r", overwrite=True)
    user = tmp_path / "r"
    user.mkdir()
    (user / "notes.txt").write_text("my notes")
    with pytest.raises(FileExistsError, match="notes.txt"):
        RunDirectory.plan(config)
    assert (user / "notes.txt").read_text() == "my notes"
    (user / "notes.txt").unlink()
    old = _created(config)
    old.write_json("summary.json", {"old": True})
    new = RunDirectory.plan(config)  # planning changes nothing
    assert old.summary() == {"old": True}
    new.create(config)
    assert not (new.path / "summary.json").exists() and new.status()["status"] == RunStatus.RUNNING.value


def test_a_symlinked_run_directory_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("x")
    (tmp_path / "runs").mkdir()
    os.symlink(target, tmp_path / "runs" / "r")
    with pytest.raises(ValueError, match="symbolic link"):
        RunDirectory.plan(RunConfig(output_dir=str(tmp_path / "runs"), run_name="r", overwrite=True))
    assert (target / "precious").read_text() == "x"


def test_status_carries_the_token_of_the_command_that_started_the_run(tmp_path):
    config = RunConfig(output_dir=str(tmp_path), run_name="r")
    with run_token() as token:
        run_dir = _created(config)
    assert run_dir.outcome(token)["status"] == "running"
    assert run_dir.outcome("another command's token") is None
    run_dir.set_status(RunStatus.FINISHED, degraded=False)
    assert run_dir.outcome(token)["status"] == "finished" and run_dir.status()["degraded"] is False


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    atomic_write(tmp_path / "a.json", json.dumps({"a": 1}))
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_rows_name_the_file_and_line_of_damage(tmp_path):
    run_dir = _created(RunConfig(output_dir=str(tmp_path), run_name="r"))
    metrics = run_dir.path / "metrics.jsonl"
    metrics.write_text('{"round": 0}\n{"round": 1}\n{"rou')  # a row cut short by a crash
    with pytest.raises(ValueError, match=r"metrics.jsonl: line 3, the last, was cut short .* resume-from="):
        run_dir.rows()
    assert [row["round"] for row in run_dir.resume_rows(2)] == [0, 1]  # a resume runs that round again
    metrics.write_text('{"round": 0}\nnot json\n{"round": 2}\n')
    with pytest.raises(ValueError, match=r"metrics.jsonl: line 2 is not JSON"):
        run_dir.rows()
    metrics.write_text('{"round": 0}\n{"accuracy": 1}\n')
    with pytest.raises(ValueError, match=r"line 2 is not a round's row"):
        run_dir.rows()


def test_a_resume_needs_every_row_before_its_checkpoint(tmp_path):
    run_dir = _created(RunConfig(output_dir=str(tmp_path), run_name="r"))
    for row in ({"round": 0}, {"round": 1}, {"round": 3}):
        run_dir.append_row(row)
    with pytest.raises(ValueError, match=r"rounds 1..3 once each, in order \(found rounds 0-1, 3\)"):
        run_dir.resume_rows(4)
    assert [row["round"] for row in run_dir.resume_rows(2)] == [0, 1]


def test_rows_are_never_appended_through_a_symlink(tmp_path):
    run_dir = _created(RunConfig(output_dir=str(tmp_path), run_name="r"))
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("mine\n")
    (run_dir.path / "metrics.jsonl").unlink()
    (run_dir.path / "metrics.jsonl").symlink_to(elsewhere)
    with pytest.raises(OSError):
        run_dir.append_row({"round": 0})
    assert elsewhere.read_text() == "mine\n"


def _strict(text: str):
    def refuse(token: str):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_a_non_finite_figure_is_written_as_null_and_read_as_no_figure(tmp_path):
    from stamen.server.outputs import summarize, summary_table

    config = RunConfig.from_flower({**RUN, "output-dir": str(tmp_path), "run-name": "r"})
    run_dir = _created(config)
    nan, inf = float("nan"), float("inf")
    run_dir.append_row({"round": 0, "global_val_acc": 0.2, "global_test_acc": 0.1})
    run_dir.append_row(
        {"round": 1, "clients": 2, "seconds": 0.1, "client_train_seconds_max": 0.05, "train_loss": nan,
         "global_val_acc": nan, "global_test_acc": inf, "per_client": {"0": {"global_test_acc": nan}}}
    )  # fmt: skip
    lines = (run_dir.path / "metrics.jsonl").read_text().splitlines()
    assert [_strict(line)["round"] for line in lines] == [0, 1] and "NaN" not in lines[1] and "Infinity" not in lines[1]
    rows = run_dir.rows()
    assert rows[1]["train_loss"] is None and rows[1]["per_client"] == {"0": {"global_test_acc": None}}
    summary = summarize(rows, 1.0, config)  # readers take null for "no figure"
    assert summary["best_round"] == 0 and summary["max_test_acc"] == 0.1 and summary["fairness"] == {}
    assert ("global test accuracy (pooled over all clients' test nodes)", "-", "0.1000") in summary_table(summary)
    run_dir.write_json("summary.json", {**summary, "loss": -inf})
    assert _strict((run_dir.path / "summary.json").read_text())["loss"] is None
    run_dir.set_status(RunStatus.FAILED, error="x", figure=nan)
    assert _strict((run_dir.path / "status.json").read_text())["figure"] is None


@pytest.mark.parametrize(
    ("dataset", "stem"), [("tu:MUTAG", "tu-MUTAG-fedavg-"), ("pyg:Amazon/Computers", "pyg-Amazon-Computers-fedavg-")]
)
def test_a_generated_name_is_one_plain_folder_for_a_dataset_form(tmp_path, dataset, stem):
    """A form's ':' and '/' never reach the folder name: one folder right under the output folder."""
    run_dir = RunDirectory.plan(RunConfig(output_dir=str(tmp_path), dataset=dataset))
    assert run_dir.path.parent == tmp_path and run_dir.path.name.startswith(stem)
    check_run_name(run_dir.path.name)  # a name a run may be given back (resume, overwrite)
