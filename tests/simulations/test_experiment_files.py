"""Experiment files: ``stamen run -c exp.toml`` (mixed with ``key=value``, later wins) and ``stamen sweep --grid``.

Every problem with a file is one line naming the file, and exit 2; nothing here trains.
"""

import json
import os

import pytest

from stamen.cli.main import main as stamen
from stamen.experiments.sweep import grid_file
from stamen.simulations.overrides import parse_overrides

SMALL = "num-server-rounds=2 csbm-nodes=300"


@pytest.fixture
def exp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").write_text('# an experiment\nlr = 0.05\nmodel = "sage"\nseed = 2\n')
    return tmp_path / "exp.toml"


def test_a_toml_file_is_read_at_its_place_among_the_overrides_and_later_wins(exp):
    assert parse_overrides(["exp.toml"]) == {"lr": 0.05, "model": "sage", "seed": 2}
    assert parse_overrides(["exp.toml", "lr=0.1"]) == {"lr": 0.1, "model": "sage", "seed": 2}
    assert parse_overrides(["exp.toml lr=0.1"]) == {"lr": 0.1, "model": "sage", "seed": 2}
    assert parse_overrides(["lr=0.1 seed=7", "exp.toml"]) == {"lr": 0.05, "seed": 2, "model": "sage"}
    assert parse_overrides([str(exp)]) == {"lr": 0.05, "model": "sage", "seed": 2}  # an absolute path
    spaced = exp.parent / "my experiments" / "a b.toml"
    spaced.parent.mkdir()
    spaced.write_text("lr = 0.2\n")
    assert parse_overrides([str(spaced)]) == {"lr": 0.2}  # a path with blanks, given alone
    with pytest.raises(ValueError, match="is not key=value"):  # the federation config reads no files
        parse_overrides(["exp.toml"], "federation config", files=False)


def test_snake_case_keys_in_a_file_are_read_as_the_command_writes_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").write_text("num_server_rounds = 3\nlocal_epochs = 2\nlr = 0.05\n")
    assert parse_overrides(["exp.toml"]) == {"num-server-rounds": 3, "local-epochs": 2, "lr": 0.05}
    assert parse_overrides(["exp.toml", "num-server-rounds=5"])["num-server-rounds"] == 5  # later wins


def test_a_run_reads_a_snake_case_file_as_its_settings(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").write_text("num_server_rounds = 2\ncsbm_nodes = 300\n")
    code = stamen(["run", "--engine", "inprocess", "--clients", "3", "-c", "exp.toml", "-c", "output-dir='runs'"])
    assert code == 0, capsys.readouterr().err
    (config,) = (tmp_path / "runs").glob("*/config.json")
    settings = json.loads(config.read_text())
    assert (settings["num-server-rounds"], settings["csbm-nodes"]) == (2, 300)


FILE_CASES = {
    "missing": ("", "nope.toml: no such file"),
    "ill-formed": ("lr = \n", "bad.toml: is not valid TOML (Invalid value (at line 1, column 6))"),
    "a table": ("[training]\nlr = 0.1\n", "bad.toml: [training] is a table; an experiment file holds run-config keys"),
    "a grid table": ("[grid]\nlr = [0.1]\n", "(a [grid] table is for stamen sweep --grid)"),
    "an array": ("lr = [0.1, 0.2]\n", "bad.toml: lr = [0.1, 0.2] is not a number, true/false or a quoted string"),
    "not UTF-8": (b"lr = '\xff'\n", "bad.toml: is not UTF-8 text"),
    "unknown key": (
        "num-server-round = 3\n",
        "unknown run-config key 'num-server-round' (did you mean 'num-server-rounds'?)",
    ),
    "bad value": ('lr = "fast"\n', "run-config key 'lr' must be a number, got 'fast'"),
    "one key in both spellings": (
        "num-server-rounds = 2\nnum_server_rounds = 3\n",
        "bad.toml: num-server-rounds is given twice, as 'num-server-rounds' and 'num_server_rounds'; give it once",
    ),
    "no keys": ("# lr = 0.1\n", "bad.toml: holds no run-config keys; give key = value lines, e.g. lr = 0.05"),
    "too large": ("lr = 0.1\n" + "#" * 1024 * 1024 + "\n", "bad.toml: is larger than 1024 KiB"),
}


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_a_bad_experiment_file_is_one_line_and_exit_2(case, tmp_path, monkeypatch, capsys):
    content, message = FILE_CASES[case]
    monkeypatch.chdir(tmp_path)
    name = "nope.toml" if case == "missing" else "bad.toml"
    if content:
        (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    code = stamen(["run", "--engine", "inprocess", "--clients", "3", "-c", SMALL, "-c", name])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("stamen run: error: ") and message in err, err
    assert sorted(path.name for path in tmp_path.iterdir()) == ([name] if content else [])  # nothing written


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_experiment_file_that_is_not_a_regular_file_is_refused_without_reading_it(
    kind, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    if kind == "fifo":
        os.mkfifo(tmp_path / "exp.toml")  # reading it would wait for a writer forever
    else:
        (tmp_path / "exp.toml").symlink_to("/dev/zero")  # reading it would never end
    assert stamen(["run", "--engine", "inprocess", "-c", SMALL, "-c", "exp.toml"]) == 2
    assert capsys.readouterr().err == (
        "stamen run: error: exp.toml: is not a regular file (a device, FIFO or socket); give a TOML file\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["exp.toml"]


def test_a_folder_given_as_an_experiment_file_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").mkdir()
    assert stamen(["run", "--engine", "inprocess", "-c", "exp.toml"]) == 2
    assert capsys.readouterr().err == "stamen run: error: exp.toml: is a folder, not a TOML file\n"


def test_a_grid_file_gives_the_swept_values(tmp_path):
    (tmp_path / "grid.toml").write_text("[grid]\nlr = [0.01, 0.005]\nmodel = ['gcn', 'sage']\n")
    assert grid_file(str(tmp_path / "grid.toml")) == [("lr", [0.01, 0.005]), ("model", ["gcn", "sage"])]


GRID_CASES = {
    "no grid table": ("lr = [0.1]\n", "grid.toml: no [grid] table; write e.g. [grid] then lr = [0.01, 0.005]"),
    "a fixed seed": ("seed = 1\n[grid]\nlr = [0.1]\n", "grid.toml: seed = ...: give seeds with --seeds 0,1,2"),
    "fixed and swept": ("lr = 0.1\n[grid]\nlr = [0.1, 0.2]\n", "grid.toml: lr is both fixed and in the grid; give it"),
    "-c and swept": ("[grid]\nlocal-epochs = [1, 2]\n", "-c/--run-config and the grid: local-epochs is both fixed"),
    "another table": ("[grid]\nlr = [0.1]\n[more]\nx = 1\n", "grid.toml: [more] is a table; an experiment file"),
    "a fixed own key": ("output-dir = 'x'\n[grid]\nlr = [0.1]\n", "grid.toml: output-dir=...: a sweep names"),
    "not a list": ("[grid]\nlr = 0.1\n", "grid.toml: [grid] lr must be a list of values, e.g. lr = [1, 2]; got 0.1"),
    "an empty list": ("[grid]\nlr = []\n", "grid.toml: [grid] lr must be a list of values"),
    "seeds": ("[grid]\nseed = [1, 2]\n", "grid.toml: [grid] seed=...: give seeds with --seeds 0,1,2"),
    "a sweep's own key": ("[grid]\nrun-name = ['a']\n", "grid.toml: [grid] run-name=...: a sweep names its runs"),
    "a repeated value": ("[grid]\nlr = [0.1, 0.1]\n", "grid.toml: [grid] lr repeats a value"),
    "ill-formed": ("[grid\n", "grid.toml: is not valid TOML"),
    "twice with --set": ("[grid]\nlr = [0.1]\n", "--set names a key twice: lr, lr"),
    "an unknown key": ("[grid]\nlearning-rate = [0.1]\n", "unknown run-config key 'learning-rate'"),
}


@pytest.mark.parametrize("case", sorted(GRID_CASES))
def test_a_bad_grid_file_is_one_line_and_exit_2(case, tmp_path, monkeypatch, capsys):
    content, message = GRID_CASES[case]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grid.toml").write_text(content)
    argv = ["sweep", "--name", "s", "--out", str(tmp_path / "sweeps"), "--clients", "3", "-c", SMALL]
    argv += ["--grid", "grid.toml", *(["--set", "lr=0.2"] if case == "twice with --set" else [])]
    argv += ["-c", "local-epochs=3"] if case == "-c and swept" else []
    code = stamen(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("stamen sweep: error: ") and message in err, err
    assert not (tmp_path / "sweeps" / "s").exists()  # nothing ran


def test_an_experiment_file_holds_the_fixed_keys_beside_the_grid(tmp_path):
    import stamen as api

    path = tmp_path / "exp.toml"
    path.write_text("num-server-rounds = 2\ncsbm_nodes = 300\nlocal-epochs = 2\n[grid]\nlr = [0.05, 0.1]\n")
    sweep = api.sweep(grid=path, clients=3, out=tmp_path / "sweeps", name="s")
    runs = sweep.runs()
    assert sorted(run.config["lr"] for run in runs) == [0.05, 0.1]
    assert {(run.config["local-epochs"], run.config["csbm-nodes"], len(run.rows) - 1) for run in runs} == {(2, 300, 2)}
    assert (
        stamen(["sweep", "--name", "s", "--out", str(tmp_path / "sweeps"), "--clients", "3", "--grid", str(path)]) == 0
    )


def test_a_missing_grid_file_is_one_line(tmp_path, capsys):
    assert stamen(["sweep", "--out", str(tmp_path), "--grid", str(tmp_path / "grid.toml")]) == 2
    assert capsys.readouterr().err == f"stamen sweep: error: {tmp_path / 'grid.toml'}: no such file; " + (
        "give the path of a TOML file of run-config keys\n"
    )
