"""Crafted files in the new layouts are refused without running anything; a tiny npz graph runs end to end."""

import gzip
import json
import pathlib
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from stamen.graphs import load_dataset


class _Payload:
    """Unpickling this creates ``marker``: what a crafted data file would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def _crafted_npz(path: Path, files, member: str, marker: Path) -> Path:
    """A GNN-benchmark archive whose ``member`` is an object array holding the payload."""
    graph = files.Graph()
    files.benchmark_npz(path, graph, extra={member: np.array([_Payload(marker)], dtype=object)})
    return path


def test_the_crafted_member_runs_under_allow_pickle(tmp_path, files):
    """The refusal below is the reader's doing: numpy with allow_pickle=True would run the payload."""
    marker = tmp_path / "ran"
    path = _crafted_npz(tmp_path / "npz" / "evil.npz", files, "labels", marker)
    with np.load(path, allow_pickle=True) as archive:
        archive["labels"]
    assert marker.exists()


def test_an_object_array_in_a_read_member_is_refused_without_running(tmp_path, files):
    marker = tmp_path / "ran"
    _crafted_npz(tmp_path / "npz" / "evil.npz", files, "labels", marker)
    with pytest.raises(ValueError, match="^[^\n]*a member is damaged or not plain data \\(labels: Object arrays") as e:
        load_dataset("npz:evil", tmp_path)
    assert "replace it with an intact copy" in str(e.value)
    assert not marker.exists()


def test_an_object_array_in_an_unread_member_is_never_opened(tmp_path, files):
    marker = tmp_path / "ran"
    _crafted_npz(tmp_path / "Amazon" / "Photo" / "raw" / "amazon_electronics_photo.npz", files, "idx_to_node", marker)
    assert load_dataset("pyg:Amazon/Photo", tmp_path).num_nodes == files.Graph().nodes
    assert not marker.exists()


def test_a_pickle_named_npz_is_refused_without_running(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "Coauthor" / "CS" / "raw" / "ms_academic_cs.npz"
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(ValueError, match="^[^\n]*does not open as an .npz archive[^\n]*$"):
        load_dataset("pyg:Coauthor/CS", tmp_path)
    assert not marker.exists()


def test_pyg_processed_files_are_never_opened(tmp_path):
    """A PyG root with a crafted processed/data.pt and no raw file: the raw file is asked for, the .pt untouched."""
    marker = tmp_path / "ran"
    processed = tmp_path / "Amazon" / "Computers" / "processed"
    processed.mkdir(parents=True)
    (processed / "data.pt").write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(FileNotFoundError, match="place amazon_electronics_computers.npz under"):
        load_dataset("pyg:Amazon/Computers", tmp_path)
    assert not marker.exists()


def test_a_pickle_in_an_ogb_csv_is_refused_without_running(tmp_path, files):
    marker = tmp_path / "ran"
    raw = files.ogb(tmp_path / "ogbn_tiny", files.Graph())
    with gzip.open(raw / "node-feat.csv.gz", "wb") as file:
        file.write(pickle.dumps(_Payload(marker)))
    with pytest.raises(ValueError, match="^dataset 'ogb:ogbn-tiny': could not read [^\n]*node-feat.csv.gz: [^\n]*$"):
        load_dataset("ogb:ogbn-tiny", tmp_path)
    assert not marker.exists()


def test_a_damaged_ogb_gzip_is_one_line(tmp_path, files):
    raw = files.ogb(tmp_path / "ogbn_tiny", files.Graph())
    content = (raw / "edge.csv.gz").read_bytes()
    (raw / "edge.csv.gz").write_bytes(content[: len(content) // 2])
    with pytest.raises(ValueError, match="^[^\n]*edge.csv.gz: [^\n]*replace the files with an intact copy$"):
        load_dataset("ogb:ogbn-tiny", tmp_path)


def test_ogb_edges_outside_the_nodes_are_refused(tmp_path, files):
    graph = files.Graph()
    raw = files.ogb(tmp_path / "ogbn_tiny", graph)
    files.gz(raw / "edge.csv.gz", f"0,1\n2,{graph.nodes}\n")
    with pytest.raises(ValueError, match=f"edge.csv.gz names a node outside \\[0, {graph.nodes}\\)"):
        load_dataset("ogb:ogbn-tiny", tmp_path)


@pytest.mark.parametrize(
    "content,fragment",
    [
        (b"\x80\x04not json", "is not a readable Wiki-CS data.json"),
        (b"[1, 2]", "it is not a JSON object"),
        (json.dumps({"features": [[1.0]], "labels": [0]}).encode(), "missing members links"),
        (json.dumps({"features": [[1.0], [1.0, 2.0]], "labels": [0, 1], "links": [[], []]}).encode(), "not 2 lists"),
        (json.dumps({"features": [[1.0]], "labels": [-1], "links": [[]]}).encode(), "non-negative integers"),
        (json.dumps({"features": [[1.0]], "labels": [0], "links": [[1]]}).encode(), "outside [0, 1)"),
        (b"[" * 100_000 + b"]" * 100_000, "is not a readable Wiki-CS data.json"),
    ],
)
def test_a_foreign_wikics_file_is_one_line(tmp_path, content, fragment):
    path = tmp_path / "WikiCS" / "raw" / "data.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with pytest.raises(ValueError, match="^[^\n]*$") as error:
        load_dataset("pyg:WikiCS", tmp_path)
    assert fragment in str(error.value)


def test_a_truncated_benchmark_npz_is_one_line(tmp_path, files):
    path = files.benchmark_npz(tmp_path / "npz" / "tiny.npz", files.Graph())
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match="^[^\n]*is not a readable graph .npz[^\n]*$"):
        load_dataset("npz:tiny", tmp_path)
    assert zipfile.is_zipfile(path) is False


def test_stamen_run_in_process_on_a_generated_npz(tmp_path, files, capsys):
    from stamen.cli.main import main

    files.benchmark_npz(tmp_path / "data" / "npz" / "tiny.npz", files.Graph(nodes=60, edges=240))
    config = f"dataset='npz:tiny' data-root='{tmp_path / 'data'}' num-server-rounds=2 output-dir='{tmp_path / 'runs'}'"
    code = main(
        ["run", "--engine", "inprocess", "--quiet", "-c", config, "-c", "run-name='tiny'"]
        + ["--federation-config", "num-supernodes=2"]
    )
    assert code == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in (tmp_path / "runs" / "tiny" / "metrics.jsonl").read_text().splitlines()]
    assert rows and rows[-1]["round"] == 2


def test_stamen_run_names_the_missing_npz_before_training(tmp_path, capsys):
    from stamen.cli.main import main

    (tmp_path / "data").mkdir()
    config = f"dataset='npz:absent' data-root='{tmp_path / 'data'}' output-dir='{tmp_path / 'runs'}'"
    code = main(["run", "--engine", "inprocess", "--quiet", "-c", config])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err == (
        f"stamen run: error: dataset 'npz:absent': raw files missing: place absent.npz under "
        f"{tmp_path / 'data' / 'npz'}/ (Stamen never downloads)"
    )
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
