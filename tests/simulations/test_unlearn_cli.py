"""``stamen unlearn RUN_DIR`` end to end on a tiny saved run, and its one-line errors."""

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from stamen.cli.commands import unlearn as command
from stamen.experiments.unlearn_experiment import METHODS, new_model, train_original
from stamen.server.outputs import save_model

ROOT = Path(__file__).resolve().parents[2]


def run(argv):
    """Mimic ``stamen.cli.main.main``: the listed errors become one line and exit 2."""
    parser = argparse.ArgumentParser(prog="stamen")
    command.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["unlearn", *argv])
    args.invocation = shlex.join(["stamen", "unlearn", *argv])
    try:
        return args.func(args), ""
    except (ValueError, FileNotFoundError, FileExistsError, RuntimeError) as error:
        return 2, f"stamen unlearn: error: {error}"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finished run's directory with the layout of stamen/server/outputs.py (config, summary, model)."""
    from tests.unlearn.conftest import small_config

    config = small_config(num_server_rounds=15, csbm_nodes=300)
    path = tmp_path_factory.mktemp("runs") / "tiny"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config.to_flower(), indent=2))
    (path / "summary.json").write_text(json.dumps({"clients": 3, "rounds": 15}))
    (path / "metrics.jsonl").write_text("")
    initial = new_model(config, 16, 4, config.seed).state_dict()  # csbm_features=16, csbm_classes=4
    save_model(path, train_original(config, 3, initial).to_torch_state_dict(), config)
    return path


def test_end_to_end_json_files_and_no_silent_overwrite(run_dir, capsys):
    code, message = run([str(run_dir), "--request", "class:1", "--methods", "wash,laf", "--json"])
    assert code == 0, message
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    assert printed["request"] == "class:1" and printed["seeds"] == [0]
    assert printed["methods"] == ["original", "retrain", "wash", "laf"]
    assert printed["per_seed"][0]["rows"]["original"]["source"] == "given"  # the saved model.pt
    assert "retrain" in captured.err  # the table went to stderr
    out = run_dir / "unlearn" / "class-1"
    assert {p.name for p in out.iterdir()} == {"report.md", "unlearning.png", "result.json"}
    assert json.loads((out / "result.json").read_text())["mean"] == printed["mean"]
    report = (out / "report.md").read_text()
    assert "| wash |" in report and "forgot-class test" in report and "\\|x\\|" in report
    assert (out / "unlearning.png").read_bytes()[:4] == b"\x89PNG"
    code, message = run([str(run_dir), "--request", "class:1", "--methods", "wash"])
    assert code == 2 and "already holds results" in message and "--overwrite" in message
    code, message = run([str(run_dir), "--request", "class:1", "--methods", "wash", "--overwrite"])
    assert code == 0, message


def test_table_on_screen_for_a_node_request(run_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")
    code, message = run([str(run_dir), "--request", "nodes:2:0.5", "--methods", "wash"])
    assert code == 0, message
    out = capsys.readouterr().out
    assert "nodes:2:0.5" in out and "MIA AUC" in out and "wash" in out


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--request", "client:3"], "client 3 is out of range 0..2"),
        (["--request", "nodes:0:1.5"], "fraction 1.5 must lie in (0, 1]"),
        (["--request", "nodes:0:0"], "fraction 0 must lie in (0, 1]"),
        (["--request", "class:4"], "class 4 is out of range 0..3"),
        (["--request", "class:1", "--methods", "sisa"], "unknown method"),
        (["--request", "client:0", "--methods", "federaser"], "a saved Flower run keeps none"),
        (["--request", "class:1", "--seeds", "x"], "--seeds must be comma-separated integers"),
    ],
)
def test_bad_input_is_one_line(run_dir, extra, needle):
    code, message = run([str(run_dir), *extra])
    assert code == 2
    assert needle in message and "\n" not in message


def test_bad_run_directories(tmp_path, run_dir):
    code, message = run([str(tmp_path / "missing"), "--request", "class:1"])
    assert code == 2 and "not found" in message
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "summary.json"):
        (broken / name).write_text((run_dir / name).read_text())
    code, message = run([str(broken), "--request", "class:1"])
    assert code == 2 and "model.pt not found" in message
    (broken / "model.pt").write_bytes(b"not a checkpoint")
    code, message = run([str(broken), "--request", "class:1"])
    assert code == 2 and "cannot be read" in message and "\n" not in message


@pytest.mark.slow
def test_exit_code_and_single_stderr_line_in_a_real_process(run_dir):
    code = (
        "import argparse, sys; from stamen.cli.commands import unlearn as c;"
        "p = argparse.ArgumentParser(prog='stamen'); c.add_parser(p.add_subparsers(dest='command'));"
        "from stamen.cli import main as cli;"
        "cli.COMMANDS = (*cli.COMMANDS, c) if c not in cli.COMMANDS else cli.COMMANDS;"
        "sys.exit(cli.main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "unlearn", str(run_dir), "--request", "nodes:0:2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "fraction 2 must lie in (0, 1]" in result.stderr
    assert "Traceback" not in result.stderr


def test_all_methods_on_a_saved_run_leave_out_federaser_and_say_so(run_dir, capsys):
    code, message = run([str(run_dir), "--request", "client:1", "--methods", "all", "--json"])
    assert code == 0, message
    captured = capsys.readouterr()
    assert "federaser left out" in captured.err
    others = [m for m in METHODS if m != "federaser"]
    assert json.loads(captured.out)["methods"] == ["original", "retrain", *others]
