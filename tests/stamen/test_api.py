"""The Python API (``stamen.run``, ``load``, ``sweep``): the command's numbers, outputs and messages, as objects.

Tiny federations on the in-process engine: 300 nodes, 3 clients, 3 rounds.
"""

import json
from pathlib import Path

import pytest

import stamen
from stamen.cli.main import main as cli

TINY = {"csbm-nodes": 300, "num-server-rounds": 3}
TINY_ITEM = "csbm-nodes=300 num-server-rounds=3"


def _rows(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_run_gives_the_rows_the_command_gives_and_load_reads_them_back(tmp_path, capsys, same_figures):
    run = stamen.run(TINY, clients=3, out=tmp_path / "api", run_name="a")
    assert capsys.readouterr().out == ""  # the API prints nothing
    assert run.status is stamen.RunStatus.FINISHED and not run.degraded
    assert run.dir == tmp_path / "api" / "a" and run.config["csbm-nodes"] == 300
    assert [row["round"] for row in run.rows] == [0, 1, 2, 3] and run.rows == _rows(run.dir)
    assert run.summary["rounds"] == 3 and run.summary["total_wall_seconds"] > 0
    assert stamen.load(run.dir) == run  # the same records, read again; nothing written
    figure = run.summary["final"]["global_test_acc"]
    assert repr(run) == f"Run('api/a', finished, 3 rounds, global_test_acc={figure:.4f})"
    assert run.summary["provenance"]["command"].startswith("stamen.run({'csbm-nodes': 300")  # who started it
    code = cli(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", TINY_ITEM])
    assert code == 0
    cli_dir = _only_run(tmp_path / "runs")
    same_figures(run.rows, _rows(cli_dir), "rows")
    same_figures(run.summary["final"], json.loads((cli_dir / "summary.json").read_text())["final"], "final")


def _only_run(folder):
    (config,) = folder.glob("*/config.json")  # (the folder holds the runs' lock files too)
    return config.parent


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the command's default output-dir, runs/, lands here


def test_snake_case_keys_a_toml_file_and_overrides_later_win(tmp_path, same_figures):
    (tmp_path / "exp.toml").write_text("csbm-nodes = 300\nnum-server-rounds = 2\nlr = 0.5\n")
    run = stamen.run(tmp_path / "exp.toml", clients=3, lr=0.05, run_name="file")
    assert run.config["lr"] == 0.05 and run.config["num-server-rounds"] == 2 and len(run.rows) == 3
    twin = stamen.run({"csbm_nodes": 300, "num_server_rounds": 2, "lr": 0.05}, clients=3, run_name="dict")
    same_figures(run.rows, twin.rows, "rows")


def test_repr_is_one_short_line_of_status_rounds_and_headline_figure(tmp_path):
    rows = [{"round": r, "seconds": 0.1, "per_client": {str(c): {"x": 1.0} for c in range(50)}} for r in range(20)]
    config = {f"key-{i}": i for i in range(200)}
    finished = stamen.Run(
        tmp_path / "runs" / "csbm", config, stamen.RunStatus.FINISHED, rows, {"rounds": 20, "final": {"test_acc": 0.5}}
    )
    assert repr(finished) == "Run('runs/csbm', finished, 20 rounds, test_acc=0.5000)"  # the clients' models'
    link = {"rounds": 1, "final": {"global_test_acc": None, "global_test_auc": 0.91, "test_auc": 0.8}}
    elsewhere = Path("/") / "elsewhere" / "lp"
    assert repr(stamen.Run(elsewhere, config, None, rows, link)) == (
        f"Run({str(elsewhere)!r}, status unknown, 1 round, global_test_auc=0.9100)"
    )
    cut = [*rows[:3], {"round": 3, "global_test_acc": 0.25}]  # interrupted: no summary, the rows so far
    interrupted = stamen.Run(tmp_path / "r", config, stamen.RunStatus.INTERRUPTED, cut, {})
    assert repr(interrupted) == "Run('r', interrupted, 3 rounds, global_test_acc=0.2500)"
    assert repr(stamen.Run(tmp_path / "r", {}, stamen.RunStatus.RUNNING, [], {})) == "Run('r', running, 0 rounds)"


def test_to_pandas_has_a_row_per_round_and_a_column_per_key(tmp_path):
    run = stamen.run(TINY, clients=3, num_server_rounds=2)
    frame = run.to_pandas()
    assert frame.shape == (3, len({key for row in run.rows for key in row}))
    assert list(frame["round"]) == [0, 1, 2]


def test_clients_frame_is_long_one_row_per_round_client_and_figure():
    rows = [
        {"round": 0, "per_client": {"1": {"test_acc": 0.5}, "0": {"test_acc": 0.25, "train_nodes": 7}}},
        {"round": 1, "global_test_acc": 0.75},  # a row without per-client figures adds none
    ]
    frame = stamen.Run(dir=None, config={}, status=None, rows=rows, summary={}).clients_frame()
    assert list(frame.columns) == ["round", "client", "figure", "value"]
    assert frame.values.tolist() == [[0, 0, "test_acc", 0.25], [0, 0, "train_nodes", 7], [0, 1, "test_acc", 0.5]]


def test_to_pandas_without_pandas_names_the_extra(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas":
            raise ImportError("No module named 'pandas'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    run = stamen.Run(dir=None, config={}, status=None, rows=[{"round": 0}], summary={})
    with pytest.raises(ImportError, match=r"Run.to_pandas needs pandas: pip install 'stamen\[pandas\]'"):
        run.to_pandas()


@pytest.mark.parametrize(
    "config,overrides",
    [({"num-server-round": 3}, {}), (TINY, {"learning_rate": 0.1}), (TINY, {"lr": "fast"}), (TINY, {"lr": [1]})],
)
def test_bad_input_is_a_value_error_with_the_commands_line(config, overrides, tmp_path, capsys):
    with pytest.raises(ValueError) as error:
        stamen.run(config, clients=3, **overrides)
    message = str(error.value)
    assert "\n" not in message
    if not any(isinstance(value, list) for value in overrides.values()):  # the command cannot be given a list
        values = {**config, **overrides}
        item = " ".join(f"{key.replace('_', '-')}={json.dumps(value)}" for key, value in values.items())
        assert cli(["run", "--engine", "inprocess", "--clients", "3", "-c", item]) == 2
        assert capsys.readouterr().err == f"stamen run: error: {message}\n"
    assert not (tmp_path / "runs").exists()  # nothing written


def test_a_missing_toml_config_and_a_bad_engine_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match=r"nope.toml: no such file"):
        stamen.run(tmp_path / "nope.toml")
    with pytest.raises(ValueError, match="engine must be one of flower, inprocess, got 'ray'"):
        stamen.run(TINY, engine="ray")
    with pytest.raises(ValueError, match="give a dict of run-config keys or the path of a .toml file"):
        stamen.run("exp.json")


def test_load_refuses_a_folder_that_is_no_run_and_reads_an_interrupted_one(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a run directory"):
        stamen.load(tmp_path)
    run = stamen.run(TINY, clients=3, num_server_rounds=2, run_name="cut")
    status = json.loads((run.dir / "status.json").read_text())
    (run.dir / "status.json").write_text(json.dumps({**status, "status": "interrupted"}))
    (run.dir / "summary.json").unlink()
    with (run.dir / "metrics.jsonl").open("a") as metrics:
        metrics.write('{"round": 3, "glo')  # a row cut short by the stop
    before = sorted((p.name, p.stat().st_mtime_ns) for p in run.dir.iterdir())
    interrupted = stamen.load(run.dir)
    assert interrupted.status is stamen.RunStatus.INTERRUPTED and interrupted.summary == {}
    assert interrupted.rows == run.rows
    assert sorted((p.name, p.stat().st_mtime_ns) for p in run.dir.iterdir()) == before


def test_sweep_gives_the_table_and_resumes(tmp_path):
    (tmp_path / "grid.toml").write_text("[grid]\nlr = [0.01, 0.05]\n")
    for grid in ("grid.toml", {"lr": [0.01, 0.05]}):
        result = stamen.sweep(TINY, grid=grid, clients=3, name="s", out=tmp_path / "sweeps", num_server_rounds=2)
        assert result.dir == tmp_path / "sweeps" / "s" and result.failed == []
        assert [(row["config"], row["lr"], row["runs"]) for row in result.rows] == [
            ("lr=0.01", 0.01, 1),
            ("lr=0.05", 0.05, 1),
        ]
        runs = {run.dir.name: run for run in result.runs()}
        assert result.rows[0]["final_test_acc_mean"] == runs["lr=0.01,seed=0"].summary["final"]["global_test_acc"]
    assert result.to_pandas().shape[0] == 2
    with pytest.raises(ValueError, match=r"^grid seed=\.\.\.: give seeds with --seeds 0,1,2$"):
        stamen.sweep(TINY, grid={"seed": [1, 2]})
