"""tracking='wandb' (stamen/server/tracking.py): a W&B run in offline mode, read back from the ``.wandb`` file W&B
wrote in the run directory, equal to ``metrics.jsonl``; nothing written outside the run directory, nothing on the
screen, and W&B's service process gone when the run ends (finished, failed, Ctrl-C or ``kill -9``).

The ``.wandb`` file is read by W&B's own reader of the installed version, ``wandb leet inspect --json`` (one JSON
object a record; wandb 0.31 has no Python reader of it any more). wandb is in the test extra: without it these
tests fail, they are not skipped.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stamen.cli.main import main as stamen
from stamen.contract.figures import ROW_TIMINGS
from stamen.contract.tracking import missing_tracker
from stamen.server import tracking

W_AND_B = {"_step", "_runtime", "_timestamp"}  # what W&B adds to each step of its own


def _offline_runs(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "wandb").glob("offline-run-*/run-*.wandb"))


def _read(path: Path) -> dict:
    """A W&B offline run as W&B reads it: its run record, each logged step's figures, and its exit codes."""
    command = [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(path)]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    records = [json.loads(line) for line in shown.stdout.splitlines()]
    runs = [r["run"] for r in records if r["type"] == "run"]
    steps: dict[int, dict[str, float]] = {}
    for record in records:
        if record["type"] == "history":
            items = record["history"]["item"]
            steps[int(items["_step"])] = {k: v for k, v in items.items() if k not in W_AND_B}
    exits = [r["exit"]["exit_code"] for r in records if r["type"] == "exit"]
    return {"run": runs[0], "steps": steps, "exit": exits}


def _config(run: dict) -> dict:
    return {key: value for key, value in run["config"]["update"].items() if key != "_wandb"}


def _logged(row: dict) -> dict[str, float]:
    """What a row of ``metrics.jsonl`` should be in W&B, from the row itself: every number but ``round``
    (timings under ``timings/``) and each client's test accuracies."""
    found = {
        (f"timings/{key}" if key in ROW_TIMINGS else key): float(value)
        for key, value in row.items()
        if key != "round" and isinstance(value, int | float) and not isinstance(value, bool)
    }
    for pid, client in row.get("per_client", {}).items():
        found |= {f"client_{pid}/{key}": float(client[key]) for key in ("test_acc", "global_test_acc") if key in client}
    return found


def _services(root: int | None = None) -> list:
    """W&B's service processes that process ``root`` (None: this one) started and that still run."""
    import psutil

    try:
        children = psutil.Process(root).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    return [child for child in children if _running(child) and "wandb-core" in _name(child)]


def _running(process) -> bool:
    """Whether ``process`` runs (a zombie has ended: only its parent's wait is missing)."""
    import psutil

    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _name(process) -> str:
    import psutil

    try:
        return str(process.name())
    except psutil.NoSuchProcess:
        return ""


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _figures_only(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in ROW_TIMINGS and k != "client_processes"} for row in rows]


@pytest.fixture
def away_from_home(tmp_path, monkeypatch):
    """A home, a working folder and a W&B told to go online, all of this test's own: W&B must write in neither
    folder and stay offline (an online W&B without a key refuses to start here, and the tracker is dropped)."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    for variable in [v for v in os.environ if v.startswith(("WANDB_", "XDG_"))]:
        monkeypatch.delenv(variable)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.chdir(cwd)
    return home, cwd


@pytest.mark.slow  # W&B starts its service process (wandb-core)
def test_a_wandb_run_offline_holds_each_round_of_metrics_jsonl_and_writes_nowhere_else(
    tmp_path, away_from_home, monkeypatch, capsys
):
    home, cwd = away_from_home
    during: list[int] = []
    record = tracking.WandbTracker.record

    def record_and_count(self, row):
        record(self, row)
        during.append(len(_services()))

    monkeypatch.setattr(tracking.WandbTracker, "record", record_and_count)
    hooks = (sys.exit, sys.excepthook)
    out = tmp_path / "runs"
    config = f"num-server-rounds=2 csbm-nodes=300 seed=1 output-dir='{out}' run-name='w' tracking='wandb'"
    assert stamen(["run", "--engine", "inprocess", "--clients", "3", "-c", config]) == 0
    shown = capsys.readouterr()
    run_dir = out / "w"
    rows = _rows(run_dir)
    # W&B's service ran while the run did, and ended with it
    assert during == [1, 1, 1] and _services() == []
    # nothing of W&B outside the run directory, nothing of it on the screen or in the log
    assert not list(cwd.iterdir())
    assert not [p for p in home.rglob("*") if "wandb" in p.name]
    assert not os.environ.get("WANDB_SERVICE") and os.environ.get("WANDB_DIR") is None
    for text in (shown.out + shown.err, (run_dir / "run.log").read_text()):
        assert "wandb" not in text.replace(str(tmp_path), "").lower()
    assert (sys.exit, sys.excepthook) == hooks  # the exit hooks W&B puts in place while its service runs: put back
    # what W&B wrote, read back by W&B
    (path,) = _offline_runs(run_dir)
    written = _read(path)
    # each round at step = round, every figure equal to the row's
    assert sorted(written["steps"]) == [row["round"] for row in rows] == [0, 1, 2]
    for row in rows:
        assert written["steps"][row["round"]] == _logged(row)
    assert "timings/seconds" in written["steps"][1] and "client_0/test_acc" in written["steps"][1]
    # the run config as W&B's config; the run named as its directory; ended as finished
    run = written["run"]
    assert _config(run) == json.loads((run_dir / "config.json").read_text())
    assert (run["project"], run["display_name"], run.get("run_group"), run.get("tags")) == ("stamen", "w", None, None)
    assert written["exit"] == [0]
    # tracking changes no number
    plain = f"num-server-rounds=2 csbm-nodes=300 seed=1 output-dir='{out}' run-name='plain'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", plain]) == 0
    assert _figures_only(_rows(out / "plain")) == _figures_only(rows)


@pytest.mark.slow  # W&B starts its service process (wandb-core)
def test_a_failed_run_ends_its_wandb_run_as_failed_and_a_resumed_run_is_a_new_one(tmp_path, away_from_home):
    config = f"num-server-rounds=4 csbm-nodes=300 lr=1e30 output-dir='{tmp_path}' run-name='d' tracking='wandb'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 1
    (path,) = _offline_runs(tmp_path / "d")
    written = _read(path)
    assert written["exit"] == [1] and sorted(written["steps"]) == [0, 1, 2]  # diverged at round 2
    assert _services() == []
    config = f"num-server-rounds=2 csbm-nodes=300 seed=1 output-dir='{tmp_path}' run-name='r' tracking='wandb'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 0
    again = f"num-server-rounds=3 csbm-nodes=300 seed=1 tracking='wandb' resume-from='{tmp_path / 'r'}'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", again]) == 0
    first, second = (_read(p) for p in _offline_runs(tmp_path / "r"))
    assert sorted(first["steps"]) == [0, 1, 2] and sorted(second["steps"]) == [2, 3]  # from round 2's checkpoint
    assert second["run"]["tags"] == ["stamen.resumed_from_round=2"] and second["exit"] == [0]
    assert second["steps"][3] == _logged(_rows(tmp_path / "r")[-1])
    assert _services() == []


@pytest.mark.slow  # W&B starts its service process (wandb-core)
def test_a_sweep_s_wandb_runs_are_one_group_tagged_with_their_values(tmp_path, away_from_home):
    argv = ["sweep", "--name", "lrs", "--out", str(tmp_path), "--clients", "3", "--set", "lr=0.01,0.05",
            "--seeds", "0", "-c", "num-server-rounds=1 csbm-nodes=300 tracking='wandb'"]  # fmt: skip
    assert stamen(argv) == 0
    paths = sorted((tmp_path / "lrs").glob("*/wandb/offline-run-*/run-*.wandb"))
    written = [_read(path) for path in paths]
    assert len(written) == 2 and {w["run"]["run_group"] for w in written} == {"sweep lrs"}
    assert {_config(w["run"])["lr"] for w in written} == {0.01, 0.05}
    for w in written:
        lr = _config(w["run"])["lr"]
        assert sorted(w["run"]["tags"]) == sorted(["stamen.sweep=lrs", "stamen.seed=0", f"stamen.grid.lr={lr}"])
        assert w["exit"] == [0] and sorted(w["steps"]) == [0, 1]
    assert _services() == []
    assert "STAMEN_TRACKING_GROUP" not in os.environ


def test_a_missing_wandb_is_named_before_any_write(tmp_path, monkeypatch, capsys):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else find_spec(name, *a))
    assert missing_tracker("mlflow,wandb") == "tracking='mlflow,wandb': wandb needs wandb: pip install 'stamen[wandb]'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "-c", f"output-dir='{tmp_path}' tracking='wandb'"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'stamen[wandb]'" in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.slow  # W&B starts its service process (wandb-core)
def test_overwrite_leaves_a_wandb_folder_it_did_not_make(tmp_path, away_from_home, capsys):
    """W&B's offline runs may not be uploaded yet: overwrite=true refuses the folder, naming it, and removes nothing."""
    config = f"num-server-rounds=1 csbm-nodes=300 output-dir='{tmp_path}' run-name='o' tracking='wandb'"
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config]) == 0
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    capsys.readouterr()
    assert stamen(["run", "--engine", "inprocess", "--quiet", "--clients", "3", "-c", config + " overwrite=true"]) == 2
    assert "(wandb)" in capsys.readouterr().err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.slow  # a run in a process of its own
@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGKILL])
def test_wandb_s_service_ends_with_a_run_stopped_by_ctrl_c_or_killed(tmp_path, sent):
    import psutil

    config = f"num-server-rounds=500 csbm-nodes=300 output-dir='{tmp_path}' run-name='k' tracking='wandb'"
    command = [sys.executable, "-m", "stamen.cli.main", "run", "--engine", "inprocess", "--quiet", "--clients", "3"]
    process = subprocess.Popen([*command, "-c", config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    metrics, deadline, services = tmp_path / "k" / "metrics.jsonl", time.monotonic() + 120, []
    while time.monotonic() < deadline and process.poll() is None:
        services = _services(process.pid)
        if services and metrics.exists() and len(metrics.read_text().splitlines()) >= 3:
            break
        time.sleep(0.1)
    assert len(services) == 1, process.communicate()[1]
    process.send_signal(sent)
    process.wait(timeout=60)
    assert process.returncode == (130 if sent == signal.SIGINT else -signal.SIGKILL)
    _, alive = psutil.wait_procs(services, timeout=5)
    assert not [p for p in alive if _running(p)]  # a killed run's service: its parent's end seen, it exits
    if sent == signal.SIGINT:
        assert _read(_offline_runs(tmp_path / "k")[0])["exit"] == [255]  # W&B's code for Ctrl-C
