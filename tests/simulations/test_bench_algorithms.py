"""`stamen bench algorithms` on a tiny csbm setting: its figures are the runs' own summaries, its bad input exits 2."""

import json
from statistics import mean, pstdev

import pytest

from stamen.benches.algorithms import chosen_algorithms
from stamen.benches.task_tables import GRAPH_CLASSIFICATION, NODE_CLASSIFICATION
from stamen.cli.main import main
from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.run_config import RunConfig
from stamen.server.outputs import summarize
from stamen.simulations.inprocess import run_in_process

SETTING = ["--datasets", "csbm", "--csbm-nodes", "200", "--partitioners", "louvain", "--clients", "3"]
SETTING += ["--seeds", "0,1", "--rounds", "3", "-c", "csbm-features=16"]


def own_summary(algorithm: str, seed: int) -> dict:
    """The same run made here, summarized by the app's own summary."""
    values = {"dataset": "csbm", "csbm-nodes": 200, "csbm-features": 16, "partitioner": "louvain"}
    values.update({"num-server-rounds": 3, "seed": seed, "min-clients": 2, "algorithm": algorithm})
    config = RunConfig.from_flower(values)
    rows: list = []
    run_in_process(config, 3, rows.append)
    return summarize(rows, 0.0, config)


def cell(values: list) -> str:
    if all(value is None for value in values):
        return "-"
    numbers = [100 * value for value in values]
    return f"{mean(numbers):.1f} ± {pstdev(numbers):.1f}"


def test_bench_algorithms_reports_each_runs_own_summary(tmp_path, capsys):
    out = tmp_path / "benchmarks"
    assert main(["bench", "algorithms", *SETTING, "--algorithms", "fedavg,local,krum", "--out", str(out)]) == 0
    record = json.loads((out / "algorithms.json").read_text())
    ran = [r for r in record["results"] if r["status"] == "ran"]
    assert [(r["algorithm"], r["seed"]) for r in ran] == [("fedavg", 0), ("fedavg", 1), ("local", 0), ("local", 1)]
    table = (out / "algorithms.md").read_text()
    for algorithm in ("fedavg", "local"):
        summaries = [own_summary(algorithm, seed) for seed in (0, 1)]
        entries = [r for r in ran if r["algorithm"] == algorithm]
        for entry, summary in zip(entries, summaries, strict=True):
            assert entry["best_round"] == summary["best_round"] and entry["wall_seconds"] > 0
            for key in ("global_test_acc", "test_acc"):
                assert entry["best"][key] == summary["best"][key] and entry["final"][key] == summary["final"][key]
        headline = {"fedavg": "global_test_acc", "local": "test_acc"}[algorithm]  # each one's spec: marked " *"
        cells = [
            cell([s[when][key] for s in summaries]) + (" *" if key == headline else "")
            for key in ("global_test_acc", "test_acc")
            for when in ("best", "final")
        ]
        assert f"| {algorithm} | {' | '.join(cells)} | " in table
    assert cells[:2] == ["-", "-"]  # local keeps no global model
    # Krum's rule needs 2f + 3 = 5 clients: listed with the validation's reason, never dropped
    assert "| krum | n/a: krum with num-malicious-nodes=1 needs at least 2f+3 = 5 clients per round" in table
    assert {r["status"] for r in record["results"] if r["algorithm"] == "krum"} == {"n/a"}
    assert "### csbm, louvain" in table and "OpenFGL's Subgraph-FL setting" in table
    assert "not found" not in table and "| OpenFGL |" not in table  # no column where OpenFGL reports no figure
    assert table.startswith("## algorithms\n") and not (out / "README.md").exists()  # its own files only


def test_every_registered_algorithm_is_benched_by_default():
    """``all`` is every algorithm the task admits, in the registry's order; task-bound methods only under their task."""
    node = [name for name, spec in ALGORITHMS.items() if spec.task in ("", NODE_CLASSIFICATION)]
    assert chosen_algorithms("all") == node and chosen_algorithms(" krum,fedavg ") == ["krum", "fedavg"]
    assert "gcfl" not in node and {"gcfl", "fedstar"} <= set(chosen_algorithms("all", GRAPH_CLASSIFICATION))


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["bench", "algorithms", "--help"])
    assert stop.value.code == 0
    shown = capsys.readouterr().out
    for option in ("--datasets", "--partitioners", "--algorithms", "--seeds", "--rounds", "--clients", "--jobs"):
        assert option in shown
    assert "--csbm-nodes" in shown and "--data-root" in shown


def test_an_unknown_algorithm_exits_2_naming_the_choices(tmp_path, capsys):
    assert main(["bench", "algorithms", *SETTING, "--algorithms", "fedavg,fedsage", "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "unknown algorithm(s) fedsage" in error
    assert all(name in error for name in ALGORITHMS)
    assert not (tmp_path / "algorithms.json").exists()


def test_cora_without_its_files_exits_2_before_any_run(tmp_path, capsys):
    empty = tmp_path / "data"
    empty.mkdir()
    command = ["bench", "algorithms", "--datasets", "cora", "--data-root", str(empty), "--out", str(tmp_path / "b")]
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Cora" in captured.err and "[bench algorithms" not in captured.out
    assert not (tmp_path / "b" / "algorithms.json").exists()


@pytest.mark.slow
def test_ctrl_c_stops_the_bench_and_its_worker_processes_at_once(tmp_path):
    """SIGINT (Ctrl-C) to a bench running jobs in worker processes: exit 130 within seconds, every worker
    gone, no queued run started afterwards and no record written."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    out = tmp_path / "out"
    command = [sys.executable, "-m", "stamen.cli.main", "bench", "algorithms", "--out", str(out), "--jobs", "2"]
    command += ["--datasets", "csbm", "--csbm-nodes", "300", "--partitioners", "louvain", "--clients", "3"]
    command += ["--algorithms", "fedavg,local", "--seeds", "0,1,2,3,4,5", "--rounds", "400"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}
    )
    seen = []
    for line in process.stdout:  # wait until a worker runs a federation
        seen.append(line)
        if line.startswith("[bench algorithms] fedavg"):
            break
    workers = psutil.Process(process.pid).children(recursive=True)
    assert workers, "".join(seen)
    process.send_signal(signal.SIGINT)
    started = time.monotonic()
    rest = process.communicate(timeout=60)[0]
    assert process.returncode == 130, rest
    assert time.monotonic() - started < 20
    assert "interrupted" in rest
    gone, alive = psutil.wait_procs(workers, timeout=5)
    assert not alive
    assert not (out / "algorithms.json").exists() and not (out / "algorithms.md").exists()
    assert "[bench algorithms 12/12]" not in rest


TASK_SETTINGS = {
    "link-prediction": ["--datasets", "csbm", "--csbm-nodes", "300", "--partitioners", "louvain"],
    "graph-classification": ["--datasets", "graphs-synth", "--partitioners", "random"],
}


@pytest.mark.parametrize("task", sorted(TASK_SETTINGS))
def test_a_tasks_bench_has_a_row_per_algorithm_under_the_tasks_own_figures(tmp_path, task):
    from stamen.benches.task_tables import figure_columns, kept
    from stamen.contract.figures import GLOBAL_TEST_AUC, clients_mean
    from stamen.contract.tasks import TASKS

    out = tmp_path / "b"
    admitted = list(TASKS[task].algorithms)
    others = [name for name in admitted if name != "fedavg"]
    chosen = ["fedavg", others[0], others[-1]]  # "all" is chosen_algorithms' (tested above); three run here
    command = ["bench", "algorithms", "--task", task, *TASK_SETTINGS[task], "--clients", "3", "--seeds", "0"]
    assert main([*command, "--algorithms", ",".join(chosen), "--rounds", "1", "--out", str(out)]) == 0
    record = json.loads((out / "algorithms.json").read_text())
    assert [r["algorithm"] for r in record["results"]] == chosen and "fedavg" in chosen
    table = (out / "algorithms.md").read_text().splitlines()
    header = next(line for line in table if line.startswith("| algorithm |"))
    assert header == "| " + " | ".join(["algorithm", *figure_columns(task, 50), "wall s / run"]) + " |"
    assert ("cut-edge AUC" in header) == (task == "link-prediction") and "OpenFGL" not in header
    rows = [line.split(" | ")[0][2:].split(" (")[0] for line in table if line.startswith("| ") and line != header]
    assert rows == chosen
    # fedavg's entry holds its own run's figures (the summary's pooled ones; link prediction: clients' means too)
    values = {"task": task, "dataset": TASK_SETTINGS[task][1], "partitioner": TASK_SETTINGS[task][-1], "seed": 0}
    values.update({"num-server-rounds": 1, "min-clients": 2, "algorithm": "fedavg"})
    values.update({"csbm-nodes": 300} if values["dataset"] == "csbm" else {})
    config, own = RunConfig.from_flower(values), []
    run_in_process(config, 3, own.append)
    best, final = kept(task, summarize(own, 0.0, config), own)
    [entry] = [r for r in record["results"] if r["algorithm"] == "fedavg"]
    assert entry["best"] == best and entry["final"] == final
    if task == "link-prediction":
        per_client = [c[GLOBAL_TEST_AUC] for c in own[entry["best_round"]]["per_client"].values()]
        assert best[clients_mean(GLOBAL_TEST_AUC)] == pytest.approx(mean(per_client))


@pytest.mark.parametrize(
    ("option", "named"),
    [(["--datasets", "cora"], "dataset='cora' is one graph"), (["--partitioners", "metis"], "partitioner='metis'")],
)
def test_a_task_refuses_a_dataset_or_partitioner_it_does_not_admit_before_any_run(tmp_path, capsys, option, named):
    command = ["bench", "algorithms", "--task", "graph-classification", *option, "--out", str(tmp_path)]
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and named in captured.err and "[bench algorithms" not in captured.out
    assert not (tmp_path / "algorithms.json").exists()


def test_the_centralised_row_is_a_one_client_fedavg_run_of_the_same_settings(tmp_path):
    """``--centralised``: per dataset and partitioner a ``centralised`` row whose figures are those of the same
    run config trained by FedAvg over one client, made here through ``stamen.run``; the table says what it is."""
    import stamen
    from stamen.benches.plots import algorithms_figure

    out = tmp_path / "b"
    command = ["bench", "algorithms", "--task", "graph-classification", *TASK_SETTINGS["graph-classification"]]
    command += ["--clients", "3", "--seeds", "0,1", "--rounds", "2", "--algorithms", "fedavg", "--centralised"]
    assert main([*command, "--out", str(out)]) == 0
    record = json.loads((out / "algorithms.json").read_text())
    assert [(r["algorithm"], r["seed"], r["clients"]) for r in record["results"]] == [
        ("fedavg", 0, 3), ("fedavg", 1, 3), ("centralised", 0, 1), ("centralised", 1, 1),
    ]  # fmt: skip
    entries = [r for r in record["results"] if r["algorithm"] == "centralised"]
    summaries = []
    for seed, entry in zip((0, 1), entries, strict=True):
        values = {"task": "graph-classification", "dataset": "graphs-synth", "partitioner": "random", "seed": seed}
        own = stamen.run(
            values, clients=1, out=tmp_path / "own", run_name=f"seed{seed}", num_server_rounds=2, min_clients=1
        )
        summaries.append(own.summary)
        # the client models of a round are what its aggregate averages: over one client, the same model
        trained = [row for row in own.rows if row["round"] >= 1]
        assert [row["global_test_acc"] for row in trained] == [row["test_acc"] for row in trained]
        assert [row["global_val_acc"] for row in trained] == [row["val_acc"] for row in trained]
        assert entry["best_round"] == own.summary["best_round"]
        for key in ("global_test_acc", "test_acc"):
            assert entry["best"][key] == own.summary["best"][key] and entry["final"][key] == own.summary["final"][key]
    table = (out / "algorithms.md").read_text()
    cells = [
        cell([s[when][key] for s in summaries]) + (" *" if key == "global_test_acc" else "")
        for key in ("global_test_acc", "test_acc")
        for when in ("best", "final")
    ]
    assert f"| centralised | {' | '.join(cells)} | " in table
    assert "centralised: a reference, not a federated method" in table
    assert "drawn over the whole graph set, not per client" in table
    assert "one round of local training (local-epochs epochs) from the global weights" in table
    labels = [tick.get_text() for tick in algorithms_figure(record).axes[0].get_yticklabels()]
    assert labels == ["fedavg", "centralised"]


def test_without_the_option_there_is_no_centralised_row_nor_its_sentence(tmp_path):
    out = tmp_path / "b"
    command = ["bench", "algorithms", "--task", "graph-classification", *TASK_SETTINGS["graph-classification"]]
    assert (
        main([*command, "--clients", "3", "--seeds", "0", "--rounds", "1", "--algorithms", "fedavg", "--out", str(out)])
        == 0
    )
    record = json.loads((out / "algorithms.json").read_text())
    assert [r["algorithm"] for r in record["results"]] == ["fedavg"]
    table = (out / "algorithms.md").read_text()
    assert "| centralised |" not in table and "centralised: a reference" not in table
