"""``stamen certify`` end to end (in-process, through add_parser/main like simulations/cli.py),
and the per-client certificates of a federated run against it."""

import argparse
import json
import shlex

import numpy as np
import pytest

from certify.ntk import ntk
from simulations.commands import certify as command


def run(argv):
    """Mimic the stamen CLI: ValueError/FileNotFoundError -> 'error: <msg>', exit 2."""
    parser = argparse.ArgumentParser(prog="stamen")
    command.add_parser(parser.add_subparsers())
    args = parser.parse_args(["certify", *argv])
    args.invocation = shlex.join(["stamen", "certify", *argv])
    try:
        return args.func(args), ""
    except (ValueError, FileNotFoundError) as exc:
        return 2, f"error: {exc}"


TINY = [
    "--dataset",
    "csbm-paper",
    "--csbm-nodes",
    "40",
    "--labeled-per-class",
    "4",
    "--targets",
    "6",
    "--budgets",
    "0,1,2",
    "--C",
    "0.5",
]


def _graph_file(tmp_path, classes=2):
    rng = np.random.default_rng(0)
    n = 14
    y = np.arange(n) % classes
    x = rng.standard_normal((n, 3)) + np.eye(3)[y]
    src = np.arange(n)
    dst = (src + 1) % n
    edge_index = np.stack([np.r_[src, dst], np.r_[dst, src]])
    labeled = np.arange(0, 8)
    targets = np.arange(8, 14)
    path = tmp_path / "g.npz"
    np.savez(path, x=x, edge_index=edge_index, y=y, labeled=labeled, targets=targets)
    return path, x, edge_index


def test_tiny_csbm_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    code, msg = run([*TINY, "--arch", "gcn,sgc", "--out", str(out), "--json"])
    assert code == 0, msg
    printed = json.loads(capsys.readouterr().out)
    assert {p.name for p in out.iterdir()} == {"certificate.json", "certified_accuracy.png", "report.md"}
    saved = json.loads((out / "certificate.json").read_text())
    assert saved == printed
    for arch in ("gcn", "sgc"):
        res = saved["architectures"][arch]
        assert len(res["targets"]) == 6
        aggr = res["aggregates"]
        assert aggr["0"]["certified_accuracy"] == pytest.approx(res["clean_accuracy"])
        assert aggr["1"]["certified_ratio"] >= aggr["2"]["certified_ratio"]
        for t in res["targets"]:
            assert {"clean_score", "budgets"} <= set(t)
            assert {"status", "worst_case_score", "seconds"} <= set(t["budgets"]["1"])
    # refuses to overwrite silently
    code, msg = run([*TINY, "--out", str(out)])
    assert code == 2 and "not empty" in msg and "--overwrite" in msg
    code, msg = run([*TINY, "--out", str(out), "--overwrite", "--model", "krr"])
    assert code == 0, msg


def test_graph_file_with_user_kernel(tmp_path):
    path, x, edge_index = _graph_file(tmp_path)
    kern = ntk(x, edge_index, "gcn")
    np.save(tmp_path / "k.npy", kern)
    out = tmp_path / "run"
    code, msg = run(
        ["--graph", str(path), "--kernel", str(tmp_path / "k.npy"), "--budgets", "1,2", "--C", "1", "--out", str(out)]
    )
    assert code == 0, msg
    saved = json.loads((out / "certificate.json").read_text())
    res = next(iter(saved["architectures"].values()))
    assert saved["ntk_variant"] == "user kernel"
    assert [t["node"] for t in res["targets"]] == list(range(8, 14))
    # the same kernel through the NTK path gives the same certificate
    code, msg = run(
        ["--graph", str(path), "--arch", "gcn", "--budgets", "1,2", "--C", "1", "--out", str(tmp_path / "run2")]
    )
    assert code == 0, msg
    res2 = json.loads((tmp_path / "run2" / "certificate.json").read_text())["architectures"]["gcn"]
    assert [t["budgets"]["2"]["status"] for t in res["targets"]] == [
        t["budgets"]["2"]["status"] for t in res2["targets"]
    ]


def test_collective_clients_and_multiclass(tmp_path):
    path, _, _ = _graph_file(tmp_path)
    code, msg = run(["--graph", str(path), "--mode", "collective", "--budgets", "1,2", "--out", str(tmp_path / "a")])
    assert code == 0, msg
    coll = json.loads((tmp_path / "a" / "certificate.json").read_text())["architectures"]["gcn"]["collective"]
    assert coll["1"]["status"] == "optimal" and coll["1"]["max_changed"] <= coll["2"]["max_changed"]
    code, msg = run(
        ["--graph", str(path), "--clients", "2", "--attacker", "any", "--budgets", "1", "--out", str(tmp_path / "b")]
    )
    assert code == 0, msg
    res = json.loads((tmp_path / "b" / "certificate.json").read_text())["architectures"]["gcn"]
    assert set(res["targets"][0]["budgets"]["1"]["per_client"]) == {"0", "1"}
    (tmp_path / "three").mkdir()
    path3, _, _ = _graph_file(tmp_path / "three", classes=3)
    code, msg = run(
        ["--graph", str(path3), "--classes", "all", "--budgets", "1", "--C", "1", "--out", str(tmp_path / "c")]
    )
    assert code == 0, msg


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--budgets", "one"], "--budgets must be a comma list of integers"),
        (["--budgets", "-1"], "--budgets must be >= 0"),
        (["--arch", "gcn,transformer"], "--arch 'transformer' is not accepted"),
        (["--solver", "gurobi"], "--solver 'gurobi' is not accepted; choose one of: highs, cbc"),
        (["--mode", "both"], "--mode 'both'"),
        (["--C", "-1"], "--C must be a positive number or 'cv'"),
        (["--ntk-variant", "paper"], "--ntk-variant 'paper'"),
        (["--classes", "1,1"], "--classes takes two distinct class ids"),
        (["--attacker", "any"], "need --clients K"),
        (["--dataset", "mnist"], "--dataset 'mnist' is not accepted"),
    ],
)
def test_bad_input_gives_one_line_error(tmp_path, extra, needle):
    code, msg = run([*TINY, "--out", str(tmp_path / "x"), *extra])
    assert code == 2
    assert needle in msg and "\n" not in msg


def test_bad_kernel_and_graph_files(tmp_path):
    path, x, edge_index = _graph_file(tmp_path)
    bad = -np.eye(14)
    np.save(tmp_path / "neg.npy", bad)
    code, msg = run(["--graph", str(path), "--kernel", str(tmp_path / "neg.npy"), "--out", str(tmp_path / "o")])
    assert code == 2 and "not positive semi-definite" in msg
    np.save(tmp_path / "small.npy", np.eye(5))
    code, msg = run(["--graph", str(path), "--kernel", str(tmp_path / "small.npy"), "--out", str(tmp_path / "o")])
    assert code == 2 and "graph has 14 nodes" in msg
    code, msg = run(["--graph", str(tmp_path / "missing.npz"), "--out", str(tmp_path / "o")])
    assert code == 2 and "not found" in msg
    np.savez(tmp_path / "partial.npz", x=x, edge_index=edge_index)
    code, msg = run(["--graph", str(tmp_path / "partial.npz"), "--out", str(tmp_path / "o")])
    assert code == 2 and "lacks arrays y, labeled, targets" in msg


def test_method_flag_milp_and_auto_agree(tmp_path):
    outs = {}
    for method in ("auto", "milp"):
        out = tmp_path / method
        code, msg = run([*TINY, "--arch", "sgc", "--search", method, "--out", str(out)])
        assert code == 0, msg
        payload = json.loads((out / "certificate.json").read_text())
        assert payload["method"] == method
        outs[method] = payload["architectures"]["sgc"]["targets"]
    for a, b in zip(outs["auto"], outs["milp"]):
        for k in ("1", "2"):
            assert a["budgets"][k]["status"] == b["budgets"][k]["status"]
        assert a["budgets"]["1"]["method"] == "enumerate"
    code, msg = run([*TINY, "--search", "fast", "--out", str(tmp_path / "bad")])
    assert code == 2 and "--search" in msg


def test_help_choices_come_from_the_registries(capsys):
    from certify.registry import METHODS, MODELS, MODES
    from graphs.names import DATASETS

    parser = argparse.ArgumentParser(prog="stamen")
    command.add_parser(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["certify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name in (*MODELS, *MODES, *METHODS, *DATASETS, "csbm-paper"):
        assert name in text, name
    assert command.DATASET_NAMES == ("csbm-paper", *DATASETS)


# ------------------------------------------ federated certificates equal stamen certify's, node by node
FEDERATION = {
    "csbm-nodes": 300,
    "certify-budgets": "0,1,2",
    "certify-targets": 8,
    "certify-labels-per-class": 5,
    "certify-c": 0.5,
    "seed": 3,
}
NUM_CLIENTS = 3


def _client_graph_file(task, path):
    """The client's certification subgraph as a ``--graph`` file (original class ids)."""
    inst = task.instance
    names = np.asarray(inst.class_names)
    np.savez(path, x=inst.x, edge_index=inst.edge_index, y=names[inst.y], labeled=inst.labeled, targets=inst.targets)
    return ["--graph", str(path), "--classes", ",".join(str(c) for c in inst.class_names)]


def test_in_run_client_certificates_equal_stamen_certify_node_by_node(tmp_path):
    """Each client's in-run certificate = ``stamen certify`` on its subgraph with the same
    labelled nodes, targets and C: statuses and per-budget results, target by target; and
    the ratios the client's query handler sends the server are those of the CLI."""
    import torch

    from client.certification import client_certificate
    from client.job import client_data
    from contract import protocol as p
    from contract.run_config import RunConfig
    from server.certification import certify_federation
    from simulations.inprocess import InProcessGrid, task_identity

    config = RunConfig.from_flower(FEDERATION)
    spec = config.federation(NUM_CLIENTS)
    cli_aggregates = {}
    for pid in range(NUM_CLIENTS):
        data = client_data(spec, pid, torch.device("cpu"))
        in_run = client_certificate(data, config, pid)
        assert in_run is not None and in_run.num_targets > 0, f"client {pid} has nothing to certify"
        out = tmp_path / f"client{pid}"
        graph = _client_graph_file(in_run.task, tmp_path / f"client{pid}.npz")
        code, msg = run([*graph, "--C", str(config.certify_c), "--budgets", "0,1,2", "--out", str(out)])
        assert code == 0, msg
        res = json.loads((out / "certificate.json").read_text())["architectures"][config.certify_arch]
        assert res["C"] == config.certify_c
        assert len(res["targets"]) == len(in_run.targets)
        node_ids = in_run.task.instance.node_ids
        for cli, mine in zip(res["targets"], in_run.targets):
            assert int(node_ids[cli["node"]]) == mine.node  # the same target, in the same order
            assert (cli["label"], cli["predicted"], cli["correct"]) == (mine.label, mine.predicted, mine.correct)
            assert cli["clean_score"] == pytest.approx(mine.clean_score, abs=1e-12)
            for k, outcome in mine.budgets.items():
                got = cli["budgets"][str(k)]
                assert got["status"] == outcome.status.value, (pid, mine.node, k)
                assert got["method"] == outcome.method.value
                assert got["flips"] == outcome.flips
                if outcome.worst_case_score is None:
                    assert got["worst_case_score"] is None
                else:
                    assert got["worst_case_score"] == pytest.approx(outcome.worst_case_score, abs=1e-12)
        cli_aggregates[pid] = res["aggregates"]
    # the client's query handler (in-process, no Flower start) replies the same figures
    with task_identity():
        report = certify_federation(InProcessGrid(config, NUM_CLIENTS), config, tmp_path)
    assert [c[p.PARTITION_ID] for c in report["clients"]] == list(range(NUM_CLIENTS))
    for reply in report["clients"]:
        aggregates = cli_aggregates[int(reply[p.PARTITION_ID])]
        assert reply[p.NUM_TARGETS] == aggregates["0"]["num_targets"]
        for k in ("0", "1", "2"):
            assert reply[f"{p.CERTIFIED_RATIO}-{k}"] == pytest.approx(aggregates[k]["certified_ratio"])
            assert reply[f"{p.CERTIFIED_ACCURACY}-{k}"] == pytest.approx(aggregates[k]["certified_accuracy"])
            unknown = aggregates[k]["unknown"] / aggregates[k]["num_targets"]
            assert reply[f"{p.UNKNOWN_RATIO}-{k}"] == pytest.approx(unknown)
