"""``stamen certify`` end to end (in-process, through add_parser/main like stamen/cli/main.py),
and the per-client certificates of a federated run against it."""

import argparse
import json
import shlex

import numpy as np
import pytest

from stamen.certify.ntk import ntk
from stamen.cli.commands import certify as command


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
        (["--budgets", "one"], "--budgets must be a comma list of integers >= 0, like '1,2,3', got 'one'"),
        (["--budgets", "-1"], "--budgets must be a comma list of integers >= 0"),
        (["--arch", "gcn,transformer"], "unknown --arch 'transformer'; --arch must be a comma list of: gcn, sgc"),
        (["--solver", "gurobi"], "unknown --solver 'gurobi'; --solver must be one of: highs, cbc"),
        (["--mode", "both"], "unknown --mode 'both'; --mode must be one of: samplewise, collective"),
        (["--C", "-1"], "--C must be a positive number or 'cv', got '-1'"),
        (["--ntk-variant", "paper"], "unknown --ntk-variant 'paper'"),
        (["--classes", "1,1"], "--classes must be two distinct class ids 'a,b' or 'all', got '1,1'"),
        (["--attacker", "any"], "--attacker/--attacker-client need --clients K"),
        (["--attacker", "all"], "unknown --attacker 'all'; --attacker must be one of: any"),
        (["--clients", "2", "--attacker-client", "2"], "--attacker-client must be < --clients (2), got 2"),
        (["--depth", "0"], "--depth must be >= 1, got 0"),
        (["--csbm-nodes", "3"], "--csbm-nodes must be >= 8, got 3"),
        (["--partitioner", "metiss"], "unknown --partitioner 'metiss'; --partitioner must be one of: random"),
        (["--dataset", "mnist"], "unknown dataset 'mnist'; dataset must be one of: csbm-paper, csbm, cora"),
        (["--dataset", "npz:../g.npz"], "dataset 'npz:../g.npz': npz:STEM takes a file stem"),
        (["--dataset", "pyg:Amazon/Books"], "unknown dataset 'pyg:Amazon/Books'; Stamen reads the raw files"),
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


def _help_text(capsys) -> str:
    parser = argparse.ArgumentParser(prog="stamen")
    command.add_parser(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["certify", "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_help_lists_every_declared_option_its_choices_and_default(capsys):
    """``stamen certify --help`` is derived from the contract: each option, its registry's choices, its default."""
    from stamen.certify.names import METHODS, MODELS, MODES, SOLVERS, VARIANTS
    from stamen.contract.certify_config import OPTIONS
    from stamen.graphs.names import DATASET_FORMS, DATASETS
    from stamen.models.names import NTK_ARCHITECTURES

    text = _help_text(capsys)
    for key in OPTIONS.values():
        assert f" {key.name} " in text, key.name
        assert " ".join(key.help.split()) in text, key.name
        if key.default is not None and key.kind != "bool":
            assert f"(default {key.default})" in text, key.name
    for name in (*MODELS, *MODES, *METHODS, *SOLVERS, *VARIANTS, *NTK_ARCHITECTURES, *DATASETS, "csbm-paper"):
        assert name in text, name
    for form in DATASET_FORMS:  # but the graph sets' (graph classification's, not certify's)
        assert (form.split(":")[0] + ":" in text) == (form != "tu:NAME"), form
    for name, entry in MODELS.items():
        assert f"{name}: {entry.help}" in text


def test_the_parsed_defaults_are_the_declared_ones(tmp_path):
    """Every option's argparse default is its Key's; parsed, they build the contract's defaults."""
    from stamen.contract.certify_config import OPTIONS, CertifyConfig

    parser = argparse.ArgumentParser(prog="stamen")
    command.add_parser(parser.add_subparsers())
    args = parser.parse_args(["certify", "--out", str(tmp_path)])
    assert {name: getattr(args, key.attribute) for name, key in OPTIONS.items()} == {
        name: str(tmp_path) if name == "out" else key.default for name, key in OPTIONS.items()
    }
    assert command._validate(args) == CertifyConfig(out=str(tmp_path))


def test_the_contract_refuses_in_one_line_naming_the_flag():
    from stamen.contract.certify_config import CertifyConfig

    with pytest.raises(ValueError, match=r"^--out is required"):
        CertifyConfig.from_values({})
    with pytest.raises(ValueError, match=r"^--time-limit must be a finite number, got nan$"):
        CertifyConfig.from_values({"out": "x", "time-limit": float("nan")})
    with pytest.raises(ValueError, match=r"^--targets must be an integer, got 'ten'$"):
        CertifyConfig.from_values({"out": "x", "targets": "ten"})
    with pytest.raises(ValueError, match=r"^unknown certify option 'label-per-class'; did you mean"):
        CertifyConfig.from_values({"out": "x", "label-per-class": 3})
    with pytest.raises(ValueError, match=r"^--mode collective needs a binary task"):
        CertifyConfig.from_values({"out": "x", "classes": "all", "mode": "collective"})
    with pytest.raises(ValueError, match=r"^--kernel replaces the NTK"):
        CertifyConfig.from_values({"out": "x", "kernel": "k.npy", "arch": "gcn,sgc"})
    config = CertifyConfig.from_values({"out": "x", "budgets": "3, 1,1", "C": "CV", "classes": "2,0"})
    assert (config.budget_list(), config.c_value(), config.class_ids(), config.binary) == ([1, 3], "cv", [2, 0], True)


# ------------------------------------------ every dataset form of stamen run, read from --data-root
def _write_graph_npz(path, n=16):
    """A small two-class graph in the sparse-matrix .npz layout (stamen.graphs.npz_graph): a ring with chords,
    integer features (exact in float32), no isolated node. Returns x, edge_index and y."""
    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    y = (np.arange(n) * 7 % n < n // 2).astype(np.int64)
    x = rng.integers(0, 3, size=(n, 4)).astype(np.float64) + 2.0 * np.eye(4)[y]
    src = np.r_[np.arange(n), np.arange(0, n, 3)]
    dst = np.r_[(np.arange(n) + 1) % n, (np.arange(0, n, 3) + 5) % n]
    adjacency = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    adjacency = ((adjacency + adjacency.T) > 0).astype(np.float64).tocsr()
    features = sp.csr_matrix(x)
    arrays = {"labels": y}
    for prefix, matrix in (("adj_matrix.", adjacency), ("attr_matrix.", features)):
        arrays.update(
            {prefix + "data": matrix.data, prefix + "indices": matrix.indices, prefix + "indptr": matrix.indptr}
        )
        arrays[prefix + "shape"] = np.asarray(matrix.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)
    coo = adjacency.tocoo()
    return x, np.stack([coo.row, coo.col]).astype(np.int64), y


def _answers(folder):
    """certificate.json without what names the source or varies between runs (timings, provenance)."""

    def strip(obj):
        if isinstance(obj, dict):
            skip = ("provenance", "command", "dataset")
            return {k: strip(v) for k, v in obj.items() if "seconds" not in k and k not in skip}
        return [strip(v) for v in obj] if isinstance(obj, list) else obj

    return strip(json.loads((folder / "certificate.json").read_text()))


def test_an_npz_dataset_certifies_as_the_named_dataset_and_the_graph_file(tmp_path):
    """``--dataset npz:STEM --data-root ROOT`` reads ROOT/npz/STEM.npz through graphs' loader: the same
    certificate as ``cora_ml`` (the same layout) on the same file, and as ``--graph`` with its split."""
    root = tmp_path / "data"
    x, edge_index, y = _write_graph_npz(root / "npz" / "tiny.npz")
    _write_graph_npz(root / "npz" / "cora_ml.npz")
    common = ["--data-root", str(root), "--labeled-per-class", "3", "--targets", "4", "--budgets", "0,1"]
    common += ["--C", "0.5", "--classes", "0,1", "--seed", "2"]
    code, msg = run(["--dataset", "npz:tiny", *common, "--out", str(tmp_path / "npz")])
    assert code == 0, msg
    payload = json.loads((tmp_path / "npz" / "certificate.json").read_text())
    assert payload["dataset"] == "npz:tiny" and payload["instance"]["num_nodes"] == len(y)
    targets = [t["node"] for t in payload["architectures"]["gcn"]["targets"]]
    assert len(targets) == 4
    code, msg = run(["--dataset", "cora_ml", *common, "--out", str(tmp_path / "named")])
    assert code == 0, msg
    assert _answers(tmp_path / "named") == _answers(tmp_path / "npz")
    graph = tmp_path / "g.npz"
    np.savez(graph, x=x, edge_index=edge_index, y=y, labeled=payload["instance"]["labeled"], targets=targets)
    code, msg = run(["--graph", str(graph), *common, "--out", str(tmp_path / "file")])
    assert code == 0, msg
    assert _answers(tmp_path / "file") == _answers(tmp_path / "npz")


def test_a_bad_npz_dataset_is_one_line_exit_2(tmp_path, capsys):
    from stamen.cli.main import main as stamen

    out = tmp_path / "out"
    (tmp_path / "data" / "npz").mkdir(parents=True)
    argv = ["certify", "--dataset", "npz:missing", "--data-root", str(tmp_path / "data"), "--out", str(out)]
    assert stamen(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("stamen certify: error: dataset 'npz:missing': raw files missing: place missing.npz")
    assert str(tmp_path / "data" / "npz") in err[-1] and not out.exists()
    # a path where a stem belongs: the run config's line, before anything is loaded
    assert stamen(["certify", "--dataset", "npz:sub/g.npz", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "stamen certify: error: dataset 'npz:sub/g.npz': npz:STEM takes a file stem (letters, digits, _ . -; "
        "no folder, no .npz) and reads <root>/npz/STEM.npz"
    ]
    from stamen.contract.run_config import RunConfig

    with pytest.raises(ValueError) as refused:
        RunConfig.from_flower({"dataset": "npz:sub/g.npz"})
    assert err[0].endswith(str(refused.value))


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

    from stamen.client.certification import client_certificate
    from stamen.client.job import client_data
    from stamen.contract import protocol as p
    from stamen.contract.run_config import RunConfig
    from stamen.server.certification import certify_federation
    from stamen.simulations.inprocess import InProcessGrid, task_identity

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


def test_a_staging_file_an_interrupted_certification_left_does_not_block_a_rerun(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".certified_accuracy.png.k3j9x2").write_bytes(b"")  # a write cut short by Ctrl-C
    code, msg = run([*TINY, "--out", str(out)])
    assert code == 0, msg
    assert (out / "certified_accuracy.png").read_bytes().startswith(b"\x89PNG")
    other = tmp_path / "other"
    other.mkdir()
    (other / ".report.md.a8b7c6").write_bytes(b"")
    (other / "mine.txt").write_text("a user's file")
    code, msg = run([*TINY, "--out", str(other)])
    assert code == 2 and "not empty" in msg  # anything else in it still refuses
    assert sorted(p.name for p in other.iterdir()) == [".report.md.a8b7c6", "mine.txt"]
