"""`stamen bench sim` on a tiny setting: it runs and writes well-formed output (no timing asserted)."""

import json
import subprocess
import sys

import pytest


@pytest.mark.slow
@pytest.mark.ray
def test_bench_sim_writes_json_and_its_table(tmp_path):
    out = tmp_path / "benchmarks"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "stamen.cli.main",
            "bench",
            "sim",
            "--dataset",
            "csbm",
            "--csbm-nodes",
            "400",
            "--clients",
            "3",
            "--rounds",
            "3",
            "--algorithms",
            "fedavg",
            "--repeats",
            "2",
            "--library-floor",
            "--flower-repeats",
            "2",
            "--name",
            "tiny",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    record = json.loads((out / "tiny.json").read_text())
    (entry,) = record["results"]
    assert entry["clients"] == 3 and entry["algorithm"] == "fedavg"
    run = entry["flwr_run"]
    assert run["total_wall_seconds"] > run["start_up_seconds"] > 0
    per_round = run["per_round"]
    assert 0 < per_round["client_train_seconds_max"] <= per_round["seconds"]
    parts = ("setup", "train", "eval", "pack")
    assert per_round["client_handler_seconds_sum"] == pytest.approx(
        sum(per_round[f"client_{part}_seconds_sum"] for part in parts)
    )
    assert per_round["client_handler_seconds_max"] <= per_round["exchange_seconds"]
    assert per_round["engine_seconds"] == pytest.approx(
        per_round["exchange_seconds"] - per_round["client_handler_seconds_sum"] / run["actors"]
    )
    assert run["peak_memory_gb"] > 0.1  # server, engine and client processes were all sampled
    assert 0 <= run["max_test_acc"] <= 1
    baseline = entry["in_process"]
    assert baseline["wall_seconds"] > 0 and 0 <= baseline["final_test_acc"] <= 1
    assert entry["wall_ratio"] == run["total_wall_seconds"] / baseline["wall_seconds"]
    assert entry["local_eval"] is False  # the plain loop's evaluations; the default's beside them
    repeats = entry["repeats"]  # interleaved repeats; the figures are the lower middle run's
    assert [len(repeats[key]) for key in ("inprocess_engine", "inprocess_engine_in_turn", "in_process")] == [2, 2, 2]
    assert baseline["wall_seconds"] == min(repeats["in_process"])
    assert entry["inprocess_engine"]["total_wall_seconds"] == min(repeats["inprocess_engine"])
    with_client_figures = entry["inprocess_engine_local_eval"]
    assert entry["engine_local_eval_ratio"] == with_client_figures["total_wall_seconds"] / baseline["wall_seconds"]
    in_turn = entry["inprocess_engine_in_turn"]  # the clients answered one by one (--in-turn)
    assert entry["engine_in_turn_ratio"] == in_turn["total_wall_seconds"] / baseline["wall_seconds"]
    assert in_turn["test_acc_at_best_val"] == entry["inprocess_engine"]["test_acc_at_best_val"]  # the same run
    engine = entry["inprocess_engine"]
    assert entry["engine_round_ratio"] == engine["seconds_per_round"] / baseline["seconds_per_round"]
    readme = (out / "tiny.md").read_text()
    assert not (out / "README.md").exists()  # a bench writes its own record and table only
    assert "## tiny" in readme and "| fedavg | 3 |" in readme and "round 1 s" in readme and "each repeat" in readme
    assert "Seconds per steady round, by part" in readme
    floor = entry["flower_floor"]  # the minimal Flower app, run the same way: its time and Stamen's over it
    assert floor["wall_seconds"] > 0 and floor["ratio"] == run["total_wall_seconds"] / floor["wall_seconds"]
    assert floor["shapes"].count(",") >= 3  # a GCN's two layers: weights and biases
    header, _, row = _table(readme)
    column = header.index("Flower floor s (flower engine / floor)")
    seconds, ratio = row[column].split()
    assert float(seconds) > 0 and ratio == f"({floor['ratio']:.2f}x)"
    assert 0 < floor["first_round_seconds"] <= floor["rounds_seconds"] < floor["wall_seconds"]
    assert "Against the Flower floor, by part" in readme
    assert floor["import_seconds"] == 0  # the bare floor's clients import nothing
    library = entry["library_floor"]  # the floor whose clients import PyTorch and PyG at their first message
    assert library["imports"] == "torch,torch_geometric" and library["import_seconds"] > 0.1
    assert library["ratio"] == run["total_wall_seconds"] / library["wall_seconds"]
    assert library["over_floor"] == library["wall_seconds"] / floor["wall_seconds"]
    assert library["shapes"] == floor["shapes"]
    assert "Against the floor whose clients import PyTorch and PyG" in readme
    # two Flower runs, each with its floors; the figures are the one whose ratio to the floor is the lower middle
    first, second = entry["flower_repeats"]
    for repeat in (first, second):
        assert repeat["floor_ratio"] == repeat["total_wall_seconds"] / repeat["floor_wall_seconds"]
        assert repeat["library_floor_ratio"] == repeat["total_wall_seconds"] / repeat["library_floor_wall_seconds"]
    chosen = min((first, second), key=lambda repeat: repeat["floor_ratio"])
    assert run["total_wall_seconds"] == chosen["total_wall_seconds"] and floor["ratio"] == chosen["floor_ratio"]
    assert library["ratio"] == chosen["library_floor_ratio"]
    assert {p.name.rsplit("-", 1)[-1] for p in (out / "runs").glob("*-flower*") if p.is_dir()} == {"flower", "2"}
    assert f"{first['floor_ratio']:.2f}x {second['floor_ratio']:.2f}x" in readme


@pytest.mark.slow
def test_the_library_floor_needs_the_floor(tmp_path):
    command = [sys.executable, "-m", "stamen.cli.main", "bench", "sim", "--library-floor", "--no-floor"]
    result = subprocess.run([*command, "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr.strip().splitlines()[-1].endswith("--library-floor runs beside the Flower floor: drop --no-floor")
    )
    assert not (tmp_path / "runs").exists() and not (tmp_path / "sim.json").exists()  # refused before any run


def test_a_floor_client_imports_module_names_only_once(monkeypatch):
    from stamen.benches.floor import FLOOR_APP

    monkeypatch.syspath_prepend(str(FLOOR_APP))
    from floorapp import client_app

    imported = []
    real = client_app.importlib.import_module
    monkeypatch.setattr(client_app.importlib, "import_module", lambda name: imported.append(name) or real(name))
    monkeypatch.setattr(client_app, "_imported", set())
    assert client_app._import("json, email.mime.text") >= 0
    assert imported == ["json", "email.mime.text"] and client_app._imported == {"json", "email.mime.text"}
    client_app._import("json,email.mime.text")  # this process has them: nothing to import again
    client_app._import("")  # the bare floor: nothing to import
    assert imported == ["json", "email.mime.text"]
    with pytest.raises(ValueError, match="is not a module name"):
        client_app._import("os; import shutil")
    assert imported == ["json", "email.mime.text"]  # refused before any import


def _table(readme: str) -> tuple[list[str], list[str], list[str]]:
    """The header, rule and first row of the first table of a record's markdown, as cells."""
    lines = [line for line in readme.splitlines() if line.startswith("|")][:3]
    return tuple([cell.strip() for cell in line.strip("|").split("|")] for line in lines)


@pytest.mark.slow
def test_bench_privacy_writes_its_tables(tmp_path):
    out = tmp_path / "benchmarks"
    tiny = "--dataset csbm --csbm-nodes 400 --clients 3 --rounds 2 --seeds 0 --epsilons 4 --timing-epochs 1"
    result = subprocess.run(
        [sys.executable, "-m", "stamen.cli.main", "bench", "privacy", *tiny.split(), "--dp-batch-size", "16"]
        + ["--name", "tiny", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    record = json.loads((out / "tiny.json").read_text())
    cost = [r for r in record["results"] if r["kind"] == "epoch_seconds"]
    trade = [r for r in record["results"] if r["kind"] == "trade_off"]
    assert len(cost) == 1 and cost[0]["dp_sgd"] > 0 and cost[0]["same_batches_no_dp"] > 0
    assert [(r["privacy"], r["target_epsilon"]) for r in trade] == [("none", None), ("dp-sgd", 4.0), ("client-dp", 4.0)]
    assert all(r["final_epsilon_max"] == pytest.approx(4.0, abs=0.1) for r in trade[1:])
    readme = (out / "tiny.md").read_text()
    assert "## tiny" in readme and "| dp-sgd | 4 |" in readme and "DP-SGD s/epoch" in readme
