"""Careless and hostile inputs on every surface besides ``stamen run``'s own: each refused in one line naming
the problem and what to do, with the documented exit code (2 bad input, 4 the environment), nothing written
before the refusal, and no ``running`` status for a process that has ended.

Through the real CLI (:func:`stamen.cli.main.main`) and the Python API, in process, on tiny configs.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import stamen
from stamen.cli.main import main as stamen_cli
from stamen.contract.algorithms import AlgorithmSpec, register_algorithm
from stamen.contract.keys import option

SMALL = "num-server-rounds=2 csbm-nodes=300"
CERTIFY = ["certify", "--dataset", "csbm-paper", "--csbm-nodes", "40", "--labeled-per-class", "4", "--targets", "4"]
CERTIFY += ["--budgets", "0,1", "--arch", "gcn", "--workers", "1"]


def _run(*items: str, clients: int = 3) -> int:
    words = [word for item in items for word in ("-c", item)]
    return stamen_cli(["run", "--engine", "inprocess", "--quiet", "--clients", str(clients), "-c", SMALL, *words])


def _line(capsys: pytest.CaptureFixture) -> str:
    """The one line on stderr (besides progress lines that start with the command's name and no 'error')."""
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err and "Traceback" not in "\n".join(err), err
    refusals = [line for line in err if "error: " in line]
    assert len(refusals) == 1, err
    return refusals[0].split("error: ", 1)[1]


def _tree(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


@pytest.fixture(scope="module")
def finished_runs(tmp_path_factory) -> dict[str, Path]:
    """A finished node-classification run and a finished link-prediction run (tiny, in process)."""
    out = tmp_path_factory.mktemp("finished")
    for name, task in (("nc", "node-classification"), ("lp", "link-prediction")):
        assert _run(f"output-dir='{out}' run-name='{name}' task='{task}'") == 0
    return {"nc": out / "nc", "lp": out / "lp"}


@pytest.fixture
def run_copy(finished_runs, tmp_path) -> Path:
    """A copy of the finished node-classification run, to damage."""
    return Path(shutil.copytree(finished_runs["nc"], tmp_path / "r"))


# ----------------------------------------------------------------------------- run folders read back


def test_a_finished_run_whose_last_row_was_cut_afterwards_is_not_resumed_as_finished(run_copy, capsys):
    metrics = run_copy / "metrics.jsonl"
    lines = metrics.read_text().splitlines(keepends=True)
    metrics.write_text("".join(lines[:-1]) + lines[-1][:20])
    before = {path.name: path.read_bytes() for path in run_copy.iterdir()}
    capsys.readouterr()
    assert _run(f"resume-from='{run_copy}'") == 2
    assert _line(capsys) == (
        f"{metrics}: line {len(lines)}, the last, was cut short though the run finished: the file was changed "
        "afterwards; restore it from a copy, or delete that line"
    )
    assert {path.name: path.read_bytes() for path in run_copy.iterdir()} == before


@pytest.mark.parametrize("name", ["metrics.jsonl", "summary.json", "config.json", "status.json"])
@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_run_file_that_is_not_a_regular_file_is_named_and_never_read(run_copy, name, kind):
    path = run_copy / name
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)  # a read would block for ever
    elif kind == "device":
        path.symlink_to("/dev/zero")  # a read would never end
    else:
        path.mkdir()
    with pytest.raises(ValueError) as refusal:
        stamen.load(run_copy)
    what = "is a folder, not a file" if kind == "folder" and name != "config.json" else "is not a regular file"
    assert str(refusal.value) == f"{path} {what}; the run directory is damaged"


def test_a_resume_from_a_run_with_a_fifo_for_its_config_is_refused(run_copy, capsys):
    (run_copy / "config.json").unlink()
    os.mkfifo(run_copy / "config.json")
    assert _run(f"num-server-rounds=3 resume-from='{run_copy}'") == 2
    assert _line(capsys) == f"{run_copy / 'config.json'} is not a regular file; the run directory is damaged"


@pytest.mark.parametrize("value", [12, None, ["runs/a"]])
def test_load_of_what_is_not_a_path_is_one_line(value):
    with pytest.raises(ValueError, match=r"^give the path of a run directory, e.g. stamen.load\("):
        stamen.load(value)


# ----------------------------------------------------------------------------- compare


def test_compare_refuses_runs_of_different_tasks(finished_runs, capsys, tmp_path):
    plot = tmp_path / "x.png"
    assert stamen_cli(["compare", str(finished_runs["nc"]), str(finished_runs["lp"]), "--plot", str(plot)]) == 2
    assert _line(capsys) == (
        "these runs learn different tasks (node-classification: nc; link-prediction: lp), whose figures differ; "
        "compare runs of one task"
    )
    assert not plot.exists()


# ----------------------------------------------------------------------------- sweep and tune


def test_a_swept_key_also_fixed_is_refused_on_every_surface(tmp_path, capsys):
    LINE = (
        "-c/--run-config and the grid: lr is both fixed and in the grid; give it in one place (the grid to sweep it, "
        "a fixed value to hold it)"
    )
    (tmp_path / "fixed.toml").write_text("lr = 0.2\n")
    for fixed in ("lr=0.2", str(tmp_path / "fixed.toml")):
        args = ["sweep", "--set", "lr=0.1", "-c", SMALL, "-c", fixed, "--out", str(tmp_path / "s"), "--name", "a"]
        assert stamen_cli(args) == 2
        assert _line(capsys) == LINE
    with pytest.raises(ValueError, match=rf"^{re.escape(LINE)}$"):
        stamen.sweep({"csbm-nodes": 300}, grid={"lr": [0.1]}, lr=0.2, out=tmp_path / "s")
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("flag", "value", "line"),
    [
        ("--trials", str(10**30), f"--trials must be at most 1,000,000, got {10**30}"),
        ("--sampler-seed", str(2**70), f"--sampler-seed must be at most 4,294,967,295, got {2**70}"),
        ("--prune-warmup", str(10**8), "--prune-warmup must be at most 10,000,000, got 100000000"),
    ],
)
def test_tune_numbers_beyond_bounds_are_refused(flag, value, line, tmp_path, capsys):
    args = ["tune", "--space", "lr=log:1e-3..1e-1", "--trials", "1", "-c", SMALL, "--out", str(tmp_path / "t")]
    assert stamen_cli([*args, flag, value]) == 2
    assert _line(capsys) == line
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("space", [None, 5, [1, 2]])
def test_a_tune_space_of_no_known_shape_is_one_line(space, tmp_path):
    with pytest.raises(ValueError, match=r"^space must be a dict such as .* got "):
        stamen.tune({"csbm-nodes": 300}, space=space, trials=1, out=tmp_path / "t")
    assert not (tmp_path / "t").exists()


# ----------------------------------------------------------------------------- certify


def _staging(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


def test_a_certification_interrupted_in_its_final_writes_finishes_on_the_same_command(tmp_path, monkeypatch, capsys):
    from stamen.certify import report

    out = tmp_path / "c"
    real = report.atomic_write

    def cut(path, data, *args, **kwargs):
        if path.name == "certified_accuracy.png":  # a writer killed mid-write leaves its staging file behind
            (path.parent / f".{path.name}.0123456789ab.tmp").write_bytes(b"\x89PNG half")
            raise KeyboardInterrupt
        return real(path, data, *args, **kwargs)

    monkeypatch.setattr(report, "atomic_write", cut)
    assert stamen_cli([*CERTIFY, "--out", str(out)]) == 130
    assert len(_staging(out)) == 1 and (out / "certificate.json").is_file()  # the outputs are half written
    monkeypatch.setattr(report, "atomic_write", real)
    capsys.readouterr()
    assert stamen_cli([*CERTIFY, "--out", str(out)]) == 0  # the same command, in the same process
    assert sorted(path.name for path in out.iterdir()) == ["certificate.json", "certified_accuracy.png", "report.md"]


def test_a_folder_of_other_files_beside_a_journal_still_needs_overwrite(tmp_path, capsys):
    from stamen.certify.journal import JOURNAL_FILE

    out = tmp_path / "c"
    out.mkdir()
    (out / JOURNAL_FILE).write_text("{}\n")
    (out / "notes.txt").write_text("keep")
    assert stamen_cli([*CERTIFY, "--out", str(out)]) == 2
    assert _line(capsys) == f"--out {out} exists and is not empty; pass --overwrite to replace its files"
    assert (out / "notes.txt").read_text() == "keep"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--budgets", str(10**30)], f"--budgets {10**30} exceeds the 8 labelled nodes (a budget flips that many "
         "labels at most); give budgets up to 8"),
        (["--arch", "gcn,sgc,gcn"], "--arch names gcn twice; give each architecture once"),
        (["--csbm-nodes", str(10**12)], "certify needs about 27755575.6 EiB of memory for the kernels over "
         "1000000000000 nodes; this machine has "),
    ],
)  # fmt: skip
def test_certify_inputs_beyond_bounds_are_refused_before_work(args, line, tmp_path, capsys):
    assert stamen_cli([*CERTIFY, *args, "--out", str(tmp_path / "c")]) == 2
    assert _line(capsys).startswith(line)
    assert not (tmp_path / "c").exists()


def test_a_damaged_graph_file_is_named(tmp_path, capsys):
    graph = tmp_path / "g.npz"
    graph.write_bytes(np.random.default_rng(0).bytes(3000))
    assert stamen_cli([*CERTIFY, "--graph", str(graph), "--out", str(tmp_path / "c")]) == 2
    line = _line(capsys)
    assert line.startswith(f"{graph} is not a readable --graph .npz (") and line.endswith("; give an intact .npz file")
    assert not (tmp_path / "c").exists()


# ----------------------------------------------------------------------------- unlearn


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        ({"methods": 5}, "methods must be 'all' or a list of method names, e.g. ['wash', 'laf']; got 5"),
        ({"seeds": "12"}, "seeds must be a list of integers >= 0, e.g. seeds=[0, 1]; got '12'"),
        ({"seeds": [0, 1.5]}, "seeds must be a list of integers >= 0, e.g. seeds=[0, 1]; got [0, 1.5]"),
    ],
)
def test_unlearn_arguments_of_the_wrong_kind_are_one_line(finished_runs, arguments, line):
    before = _tree(finished_runs["nc"])
    with pytest.raises(ValueError) as refusal:
        stamen.unlearn(finished_runs["nc"], "client:0", **arguments)
    assert str(refusal.value) == line
    assert _tree(finished_runs["nc"]) == before


def test_unlearn_of_what_is_not_a_run_is_one_line():
    with pytest.raises(ValueError, match=r"^run must be a stamen.Run or the path of a run directory; got 12$"):
        stamen.unlearn(12, "client:0")


# ----------------------------------------------------------------------------- the API's environment errors


def test_an_output_folder_the_system_refuses_is_the_environments_line(tmp_path, monkeypatch):
    import errno

    runs, mkdir = tmp_path / "runs", Path.mkdir

    def refuse(self, *args, **kwargs):
        if self == runs:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.raises(stamen.EnvironmentFailed) as failure:
        stamen.run({"csbm-nodes": 60, "num-server-rounds": 1}, clients=2, out=runs)
    assert str(failure.value) == f"{runs}: Permission denied; check its permissions, or choose another folder"


# ----------------------------------------------------------------------------- plug-ins


def _spec(**facts) -> AlgorithmSpec:
    return AlgorithmSpec(**{"name": "hostile-alg", "help": "h", "server": "m.s", "client": "m.c", **facts})


@pytest.mark.parametrize(
    ("facts", "line"),
    [
        ({"keys": ("lr",)}, "algorithm 'hostile-alg': each key is a stamen.option(name, ...) with a kebab-case name"),
        ({"help": 5}, "algorithm 'hostile-alg': help must be a string, got 5"),
        ({"task": "nosuch"}, "algorithm 'hostile-alg': task 'nosuch' is not one of graph-classification, "
         "link-prediction, node-classification"),
        ({"privacy": ("nosuch",)}, "algorithm 'hostile-alg': privacy must be a tuple of none, dp-sgd, client-dp; "
         "got ('nosuch',)"),
        ({"privacy": "none"}, "algorithm 'hostile-alg': privacy must be a tuple of privacy modes; got 'none'"),
        ({"least_clients": (-1, 1)}, "algorithm 'hostile-alg': least_clients must be (factor, constant), "
         "integers >= 0; got (-1, 1)"),
        ({"keys": (option("lr", 0.1, "h"),)}, "algorithm 'hostile-alg': key 'lr' is already a run-config key; "
         "name it otherwise"),
    ],
)  # fmt: skip
def test_a_bad_algorithm_spec_is_refused_at_registration(facts, line, registries):
    from stamen.contract.algorithms import ALGORITHMS

    with pytest.raises(ValueError) as refusal:
        register_algorithm(_spec(**facts))
    assert str(refusal.value) == line
    assert "hostile-alg" not in ALGORITHMS


def test_a_plugin_whose_module_is_missing_is_refused_before_the_run(registries, tmp_path, capsys):
    register_algorithm(_spec(server="stamen_no_such_package.server", client="stamen_no_such_package.client"))
    assert _run(f"output-dir='{tmp_path / 'runs'}' algorithm='hostile-alg'") == 2
    assert _line(capsys) == (
        "stamen_no_such_package.server (the server part of algorithm 'hostile-alg') cannot be imported (No module "
        "named 'stamen_no_such_package'); install its package, or register the algorithm with the module that "
        "defines it"
    )
    assert not (tmp_path / "runs").exists()


# ----------------------------------------------------------------------------- dataset files


@pytest.mark.parametrize("kind", ["fifo", "device", "loop"])
def test_a_tu_file_that_is_not_a_regular_file_is_named(kind, tmp_path, capsys):
    from tests.graphs.test_tu_folder import write_tu

    root = write_tu(tmp_path / "data")
    path = root / "TINY" / "raw" / "TINY_A.txt"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(path)
    task = f"task='graph-classification' partitioner='random' dataset='tu:TINY' data-root='{root}'"
    assert _run(f"output-dir='{tmp_path / 'runs'}' {task}", clients=2) == 2
    assert _line(capsys) == (
        f"dataset 'tu:TINY': {path} is not a regular file (a folder, FIFO, device or broken link), so it is not "
        "read; put the file itself there"
    )
    assert not (tmp_path / "runs").exists()


# ----------------------------------------------------------------------------- deployment's argument checks


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--clients", str(10**9), "--host", "127.0.0.1"], "the number of SuperNodes must be at most 10,000 (a key "
         "pair each), got 1000000000"),
        (["--clients", "2", "--host", "not a host"], "--host 'not a host' is neither an IP address nor a host name; "
         "give e.g. 10.0.0.5 or node1"),
        (["--clients", "2", "--host", "a..b"], "--host 'a..b' is neither an IP address nor a host name; give e.g. "
         "10.0.0.5 or node1"),
    ],
)  # fmt: skip
def test_deploy_certs_refuses_before_writing(args, line, tmp_path, capsys):
    assert stamen_cli(["deploy", "certs", "--out", str(tmp_path / "c"), *args]) == 2
    assert _line(capsys) == line
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("step", ["superlink", "supernode"])
@pytest.mark.parametrize("port", ["70000", "0", "http"])
def test_a_port_outside_tcp_is_refused_by_the_parser(step, port, tmp_path, capsys):
    args = ["deploy", step, "--port", port]
    if step == "superlink":
        args += ["--certs", str(tmp_path)]
    else:
        args += ["--superlink", "127.0.0.1:9092", "--ca", str(tmp_path / "ca.pem"), "--key", str(tmp_path / "k")]
        args += ["--partition-id", "0", "--num-partitions", "2"]
    with pytest.raises(SystemExit) as exit_:
        stamen_cli(args)
    assert exit_.value.code == 2
    assert f"argument --port: a port is a whole number from 1 to 65535, got '{port}'" in _line(capsys)


@pytest.mark.parametrize("step", ["partition", "local"])
def test_deploy_steps_that_build_the_graph_here_check_its_size_first(step, tmp_path, capsys):
    out = ["--out", str(tmp_path / "p")] if step == "partition" else ["--workdir", str(tmp_path / "p")]
    assert stamen_cli(["deploy", step, *out, "--clients", "3", "-c", f"csbm-nodes={10**12}"]) == 2
    assert _line(capsys).startswith("run needs about 822.2 TiB of memory; this machine has ")
    assert not (tmp_path / "p").exists()


def test_deploy_local_names_its_own_flag(tmp_path, capsys):
    assert stamen_cli(["deploy", "local", "--clients", "1", "--workdir", str(tmp_path / "w"), "-c", SMALL]) == 2
    assert _line(capsys) == "min-clients=2 exceeds --clients=1; give more --clients"
    assert not (tmp_path / "w").exists()


def test_deploy_run_checks_the_run_config_before_writing_the_connection(tmp_path, monkeypatch, capsys):
    from stamen.cli.commands import deploy

    written = []
    monkeypatch.setattr(deploy, "write_connection", lambda *args: written.append(args))
    (tmp_path / "ca.pem").write_text("a CA")
    assert stamen_cli(["deploy", "run", "--ca", str(tmp_path / "ca.pem"), "-c", "num-server-round=3"]) == 2
    assert _line(capsys).startswith("unknown run-config key 'num-server-round'")
    assert written == []


def test_a_stopped_run_the_serverapp_recorded_failed_without_a_cause_gets_the_superlinks_cause(tmp_path):
    """On a real SuperLink the stopped ServerApp may record ``failed`` itself, with no reason it could know
    (Flower exits it); the command that followed the run adds the reason the SuperLink gives."""
    from stamen.contract.run_config import RunConfig
    from stamen.server.rundir import RunDirectory, RunStatus
    from stamen.simulations.deploy.stopped_run import stopped_from_outside

    config = RunConfig(output_dir=str(tmp_path), run_name="r")
    folder = RunDirectory.plan(config)
    folder.create(config, flower_run_id=7, engine="flower")
    folder.set_status(RunStatus.FAILED, error="0", ended=1.0)
    failure = stopped_from_outside(str(tmp_path), "r", 7)
    status = folder.status()
    assert (status["status"], status["cause"], status["serverapp_error"]) == ("failed", "stopped", "0")
    assert status["error"] == "the run was stopped from outside (flwr stop, Flower run 7) before it finished"
    assert str(failure).endswith(f"{folder.path / 'status.json'} records it as failed")
    folder.set_status(RunStatus.FAILED, error="ValueError: boom", cause="environment")
    stopped_from_outside(str(tmp_path), "r", 7)
    assert folder.status()["cause"] == "environment"  # a cause recorded already is kept


def test_a_planetoid_file_larger_than_any_is_refused_unread(tmp_path):
    from stamen.graphs.data_pickle import MAX_BYTES, read_matrix

    path = tmp_path / "ind.cora.x"
    with open(path, "wb") as sparse:
        sparse.truncate(MAX_BYTES + 1)  # a sparse file: no disk used, and a whole read would hold it all in memory
    with pytest.raises(ValueError) as refusal:
        read_matrix(path)
    assert str(refusal.value) == (
        f"it holds {MAX_BYTES + 1:,} bytes, more than a Planetoid raw file ({MAX_BYTES:,} at most)"
    )


@pytest.mark.parametrize("text", ["0\n0=0", "l r=0.1", "a\tb=0.1,0.2"])
def test_a_set_whose_key_holds_blanks_is_one_line(text):
    from stamen.experiments.sweep import parse_set

    with pytest.raises(ValueError) as refusal:
        parse_set(text)
    assert str(refusal.value) == f"--set {text!r}: write key=value1,value2, e.g. --set lr=0.01,0.005"
