"""Hostile data files: nothing read from disk runs code; a damaged file is one clear line."""

import os
import pathlib
import pickle
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from stamen.graphs import load_dataset
from stamen.graphs.npz_graph import REQUIRED
from stamen.graphs.planetoid import read_planetoid

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PICKLED_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph")


class _Payload:
    """Unpickling this creates ``marker``: what a crafted data file would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def _payload(marker: Path, protocol: int) -> bytes:
    return pickle.dumps(_Payload(marker), protocol=protocol)


@pytest.fixture
def cora_root(tmp_path, shared_datasets):
    """A writable copy of the shared data root's Cora raw files."""
    raw = tmp_path / "data" / "Cora" / "raw"
    shutil.copytree(shared_datasets / "Cora" / "raw", raw)
    for path in raw.iterdir():
        path.chmod(0o644)
    return raw.parent.parent


@pytest.fixture
def npz_root(tmp_path, shared_datasets):
    folder = tmp_path / "data" / "npz"
    folder.mkdir(parents=True)
    shutil.copyfile(shared_datasets / "npz" / "cora_ml.npz", folder / "cora_ml.npz")
    return folder.parent


def _one_line_error(name: str, root: Path, *fragments: str) -> str:
    with pytest.raises(ValueError) as caught:
        load_dataset(name, root)
    message = str(caught.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def _rewrite(path: Path, value: object) -> None:
    path.write_bytes(pickle.dumps(value, protocol=4))


def _original(raw: Path, part: str) -> object:
    with open(raw / f"ind.cora.{part}", "rb") as file, warnings.catch_warnings():  # trusted: the shared Cora files
        warnings.simplefilter("ignore", DeprecationWarning)  # scipy.sparse.csr, the name the files use
        return pickle.load(file, encoding="latin1")


def test_planetoid_reader_equals_pyg(tmp_path, shared_datasets):
    from torch_geometric.datasets import Planetoid

    shutil.copytree(shared_datasets / "Cora", tmp_path / "Cora")
    for path in (tmp_path / "Cora" / "raw").iterdir():
        path.chmod(0o644)
    reference = Planetoid(str(tmp_path), "Cora")[0]
    ours = read_planetoid(shared_datasets / "Cora" / "raw", "cora")
    assert ours.x.dtype == reference.x.dtype and ours.y.dtype == reference.y.dtype
    assert torch.equal(ours.x, reference.x)
    assert torch.equal(ours.y, reference.y)
    assert torch.equal(ours.edge_index, reference.edge_index)
    assert ours.num_classes == 7


def test_loading_writes_nothing(tmp_path, shared_datasets, monkeypatch):
    """The raw files are read in place: no copy, no processed folder, in the cache or the root."""
    monkeypatch.setenv("STAMEN_CACHE", str(tmp_path / "cache"))
    before = sorted(p.name for p in (shared_datasets / "Cora").rglob("*"))
    assert load_dataset("cora", shared_datasets).num_nodes == 2708
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())
    assert sorted(p.name for p in (shared_datasets / "Cora").rglob("*")) == before


def test_gapped_test_ids_equal_pyg(tmp_path, shared_datasets):
    """CiteSeer's isolated test nodes (ids missing from test.index): built from Cora with 15 test rows dropped."""
    from torch_geometric.datasets import Planetoid

    source = shared_datasets / "Cora" / "raw"
    index = np.loadtxt(source / "ind.cora.test.index", dtype=np.int64)
    drop = np.flatnonzero((index > index.min()) & (index < index.max()))[::60][:15]
    keep = np.setdiff1d(np.arange(index.size), drop)
    for root in (tmp_path / "pyg", tmp_path / "ours"):
        raw = root / "CiteSeer" / "raw"
        raw.mkdir(parents=True)
        for part in PICKLED_PARTS:
            value = _original(source, part)
            _rewrite(raw / f"ind.citeseer.{part}", value[keep] if part in ("tx", "ty") else value)
        (raw / "ind.citeseer.test.index").write_text("".join(f"{i}\n" for i in index[keep]))
    reference = Planetoid(str(tmp_path / "pyg"), "CiteSeer")[0]
    ours = read_planetoid(tmp_path / "ours" / "CiteSeer" / "raw", "citeseer")
    assert ours.num_nodes == reference.num_nodes == 2708
    assert not ours.x[index[drop]].any()  # the gap nodes: zero features, as in PyG
    assert torch.equal(ours.x, reference.x)
    assert torch.equal(ours.y, reference.y)
    assert torch.equal(ours.edge_index, reference.edge_index)


def test_the_payload_runs_under_plain_pickle(tmp_path):
    """The crafted file below really executes under ``pickle.load``, so its refusal is tested."""
    marker = tmp_path / "ran"
    pickle.loads(_payload(marker, 2))
    assert marker.exists()


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize("part", PICKLED_PARTS)
def test_a_crafted_pickle_is_refused_without_running(cora_root, tmp_path, part, protocol):
    marker = tmp_path / "pwned"
    (cora_root / "Cora" / "raw" / f"ind.cora.{part}").write_bytes(_payload(marker, protocol))
    _one_line_error("cora", cora_root, f"ind.cora.{part}", "replace them with an intact copy")
    assert not marker.exists()


def test_an_object_array_is_refused(cora_root):
    _rewrite(cora_root / "Cora" / "raw" / "ind.cora.ty", np.array([[1, "a"]], dtype=object))
    _one_line_error("cora", cora_root, "ind.cora.ty", "plain numeric type")


def test_a_truncated_test_index_names_the_file(cora_root):
    index = cora_root / "Cora" / "raw" / "ind.cora.test.index"
    index.write_bytes(b"".join(index.read_bytes().splitlines(keepends=True)[:400]))
    _one_line_error("cora", cora_root, "ind.cora.test.index has 400 entries but ind.cora.tx has 1000 rows")


def _mutate_test_index(raw: Path, edit) -> None:
    path = raw / "ind.cora.test.index"
    lines = path.read_bytes().splitlines()
    edit(lines)
    path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize(
    "edit,fragment",
    [
        (lambda lines: lines.__setitem__(1, lines[0]), "more than once"),
        (lambda lines: lines.__setitem__(0, b"5"), "starts at node 5"),
        (lambda lines: lines.__setitem__(0, b"9000"), "skips node ids"),
        (lambda lines: lines.__setitem__(4, b"12x"), "line 5 is not a node id"),
    ],
)
def test_a_damaged_test_index_names_the_file(cora_root, edit, fragment):
    _mutate_test_index(cora_root / "Cora" / "raw", edit)
    _one_line_error("cora", cora_root, "ind.cora.test.index", fragment)


def test_paired_files_must_agree_in_rows(cora_root):
    raw = cora_root / "Cora" / "raw"
    _rewrite(raw / "ind.cora.ty", _original(raw, "ty")[:-1])
    _one_line_error("cora", cora_root, "ind.cora.ty has 999 rows but ind.cora.tx has 1000")


def test_labels_must_be_one_hot(cora_root):
    raw = cora_root / "Cora" / "raw"
    labels = _original(raw, "ally").copy()
    labels[3] = 0
    _rewrite(raw / "ind.cora.ally", labels)
    _one_line_error("cora", cora_root, "ind.cora.ally row 3 is not one-hot")


def test_graph_nodes_must_be_in_range(cora_root):
    raw = cora_root / "Cora" / "raw"
    graph = dict(_original(raw, "graph"))
    graph[0] = [*graph[0], 99_999]
    _rewrite(raw / "ind.cora.graph", graph)
    _one_line_error("cora", cora_root, "ind.cora.graph names node 99999 but the graph has 2708 nodes")


def test_csr_parts_must_agree(cora_root):
    raw = cora_root / "Cora" / "raw"
    features = _original(raw, "tx")
    features.indices[5] = 5000  # past the 1433 columns
    _rewrite(raw / "ind.cora.tx", features)
    _one_line_error("cora", cora_root, "ind.cora.tx", "CSR indices reach outside the 1433 columns")


# ---- Cora-ML .npz -------------------------------------------------------------------------------


def _npz(root: Path) -> Path:
    return root / "npz" / "cora_ml.npz"


def _resave(root: Path, edit) -> None:
    """Rewrite the archive with its graph members only (no object arrays), after ``edit``."""
    with np.load(_npz(root), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in REQUIRED}
    edit(arrays)
    np.savez(_npz(root), **arrays)


def test_a_truncated_npz_is_one_line(npz_root):
    path = _npz(npz_root)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    _one_line_error("cora_ml", npz_root, str(path), "replace it with an intact copy")


def test_a_bad_crc_npz_is_one_line(npz_root):
    path = _npz(npz_root)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("labels.npy")
    content = bytearray(path.read_bytes())
    position = info.header_offset + 30 + len(info.filename) + len(info.extra) + info.compress_size - 8
    content[position] ^= 0xFF  # inside the stored labels, past the .npy header
    path.write_bytes(bytes(content))
    _one_line_error("cora_ml", npz_root, str(path), "Bad CRC")


def test_a_corrupt_compressed_npz_is_one_line(npz_root):
    path = _npz(npz_root)
    _resave(npz_root, lambda arrays: None)
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    np.savez_compressed(path, **arrays)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("attr_matrix.data.npy")
    content = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for position in range(start + 100, start + 140):
        content[position] ^= 0x5A
    path.write_bytes(bytes(content))
    _one_line_error("cora_ml", npz_root, str(path), "a member is damaged")


def test_an_npz_without_labels_is_one_line(npz_root):
    _resave(npz_root, lambda arrays: arrays.pop("labels"))
    _one_line_error("cora_ml", npz_root, "missing arrays labels")


@pytest.mark.parametrize(
    "edit,fragment",
    [
        (lambda a: a.__setitem__("adj_matrix.indptr", a["adj_matrix.indptr"][:-1]), "indptr has 2995 entries"),
        (lambda a: a["attr_matrix.indptr"].__setitem__(-1, 10), "CSR indptr does not start at 0 and rise"),
        (lambda a: a.__setitem__("adj_matrix.data", a["adj_matrix.data"][:-1]), "indices has 8416 entries"),
        (lambda a: a["adj_matrix.indices"].__setitem__(0, 2995), "adj_matrix: CSR indices reach outside the 2995"),
        (lambda a: a.__setitem__("labels", a["labels"][:-1]), "labels has 2994 entries but the graph has 2995"),
        (lambda a: a.__setitem__("adj_matrix.shape", np.array([2995, 3000])), "adj_matrix is 2995 x 3000"),
    ],
)
def test_an_inconsistent_npz_is_one_line(npz_root, edit, fragment):
    _resave(npz_root, edit)
    _one_line_error("cora_ml", npz_root, "not a readable graph .npz", fragment)


def test_the_resaved_npz_still_loads(npz_root):
    """The edits above start from a copy that loads: each failure is the edit's."""
    _resave(npz_root, lambda arrays: None)
    assert load_dataset("cora_ml", npz_root).num_nodes == 2995


# ---- through the CLI ----------------------------------------------------------------------------


def _cli(*argv: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "STAMEN_CACHE": str(cache), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "stamen.cli.main", *argv],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env=env,
    )


@pytest.mark.slow
def test_stamen_partition_refuses_a_crafted_pickle(cora_root, tmp_path):
    marker = tmp_path / "pwned"
    (cora_root / "Cora" / "raw" / "ind.cora.ty").write_bytes(_payload(marker, 2))
    result = _cli("partition", "--dataset", "cora", "--data-root", str(cora_root), "--clients", "3", cache=tmp_path)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "ind.cora.ty" in result.stderr and "Traceback" not in result.stderr
    assert not marker.exists()


@pytest.mark.slow
def test_stamen_partition_refuses_a_truncated_npz(npz_root, tmp_path):
    path = _npz(npz_root)
    path.write_bytes(path.read_bytes()[:1000])
    result = _cli("partition", "--dataset", "cora_ml", "--data-root", str(npz_root), "--clients", "3", cache=tmp_path)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "cora_ml.npz" in result.stderr and "Traceback" not in result.stderr


# ---- Stamen's own files: the partition cache and a node's exported partition -------------------


def test_a_damaged_or_crafted_partition_cache_is_recomputed(tmp_path, monkeypatch):
    from stamen.graphs import make_csbm
    from stamen.graphs.federation import cached_partition

    monkeypatch.setenv("STAMEN_CACHE", str(tmp_path / "cache"))
    graph = make_csbm(num_nodes=300, seed=0)
    parts = cached_partition(graph, 3, "louvain", 0, 0.5)
    [path] = (tmp_path / "cache" / "partitions").iterdir()
    intact = path.read_bytes()
    marker = tmp_path / "pwned"
    damages = {
        "truncated": lambda: path.write_bytes(intact[: len(intact) // 2]),
        "crafted": lambda: np.savez(path, nodes=np.array([_Payload(marker)], dtype=object), bounds=np.array([1])),
        "not covering": lambda: np.savez(path, nodes=np.arange(10), bounds=np.array([3, 6])),
    }
    for name, damage in damages.items():
        damage()
        again = cached_partition(graph, 3, "louvain", 0, 0.5)
        assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True)), name
        with np.load(path, allow_pickle=False) as stored:  # replaced by the recomputed parts
            assert np.array_equal(stored["nodes"], np.concatenate(parts)), name
    assert not marker.exists()


@pytest.fixture
def exported(tmp_path):
    from stamen.graphs import FederationSpec
    from stamen.graphs.node_data import export_partitions

    spec = FederationSpec(dataset="csbm", num_clients=2, seed=1, dataset_options=(("num_nodes", 200),))
    [path, _] = export_partitions(spec, tmp_path / "export")
    return FederationSpec(**{**spec.__dict__, "data_root": str(path.parent)}), path


def _load_partition_error(spec) -> str:
    from stamen.graphs.node_data import load_partition

    with pytest.raises(ValueError) as caught:
        load_partition(spec, 0)
    message = str(caught.value)
    assert "\n" not in message and "stamen-partition.pt" in message, message
    return message


def test_an_exported_partition_loads(exported):
    from stamen.graphs.node_data import load_partition

    spec, _ = exported
    assert load_partition(spec, 0).num_nodes > 0


def test_a_crafted_partition_export_is_refused_without_running(exported, tmp_path):
    spec, path = exported
    marker = tmp_path / "pwned"
    torch.save({"x": _Payload(marker)}, path)
    assert "not a readable Stamen partition" in _load_partition_error(spec)
    assert not marker.exists()


def test_a_truncated_partition_export_is_one_line(exported):
    spec, path = exported
    path.write_bytes(path.read_bytes()[:500])
    assert "export it again" in _load_partition_error(spec)


def test_an_inconsistent_partition_export_is_one_line(exported):
    spec, path = exported
    stored = torch.load(path, weights_only=True)
    stored["y"] = stored["y"][:-1]
    torch.save(stored, path)
    assert "disagree in node count" in _load_partition_error(spec)
