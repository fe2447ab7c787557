"""Datasets named by form: ``npz:STEM``, ``pyg:CLASS/NAME``, ``ogb:ogbn-NAME``, read from tiny files."""

import shutil

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.utils import coalesce, is_undirected

from stamen.contract.run_config import KEYS, RunConfig
from stamen.graphs import load_dataset
from stamen.graphs.forms.pyg import pyg_datasets
from stamen.graphs.names import accepted_datasets, dataset_slug


def _check_graph(data, graph, binary: bool = False) -> None:
    """Shapes, labels and undirected, coalesced, self-loop-free edges equal to the written ones."""
    assert (data.num_nodes, data.num_features, data.num_classes) == (graph.nodes, graph.x.shape[1], graph.classes)
    assert torch.equal(data.y, torch.from_numpy(graph.y).long())
    expected = (graph.x > 0).astype(np.float32) if binary else graph.x.astype(np.float32)
    assert torch.equal(data.x, torch.from_numpy(expected))
    edge_index = data.edge_index
    assert is_undirected(edge_index) and not torch.any(edge_index[0] == edge_index[1])
    assert torch.equal(edge_index, coalesce(edge_index, num_nodes=data.num_nodes))  # sorted, no duplicates
    assert {tuple(pair) for pair in edge_index.t().tolist()} == graph.undirected_pairs()


@pytest.mark.parametrize("layout", ["underscored", "dense-features", "csr-labels", "dotted"])
def test_npz_stem_reads_both_key_conventions(tmp_path, files, layout):
    graph = files.Graph(seed=1)
    path = tmp_path / "npz" / "tiny.npz"
    if layout == "dotted":
        files.dotted_npz(path, graph)
    else:
        files.benchmark_npz(path, graph, dense=layout == "dense-features", csr_labels=layout == "csr-labels")
    data = load_dataset("npz:tiny", tmp_path)
    _check_graph(data, graph)
    assert data.name == "npz:tiny"


@pytest.mark.parametrize(
    "name,relative",
    [
        ("pyg:Amazon/Computers", "Amazon/Computers/raw/amazon_electronics_computers.npz"),
        ("pyg:Amazon/Photo", "Amazon/Photo/raw/amazon_electronics_photo.npz"),
        ("pyg:Coauthor/CS", "Coauthor/CS/raw/ms_academic_cs.npz"),
        ("pyg:Coauthor/Physics", "Coauthor/Physics/raw/ms_academic_phy.npz"),
        ("pyg:CitationFull/Cora_ML", "CitationFull/cora_ml/raw/cora_ml.npz"),
        ("pyg:CitationFull/DBLP", "CitationFull/dblp/raw/dblp.npz"),
    ],
)
def test_pyg_npz_classes_read_their_raw_file_with_binary_features(tmp_path, files, name, relative):
    graph = files.Graph(seed=2)
    files.benchmark_npz(tmp_path / relative, graph)
    _check_graph(load_dataset(name, tmp_path), graph, binary=True)


def test_pyg_planetoid_is_the_planetoid_reader(tmp_path, shared_datasets):
    shutil.copytree(shared_datasets / "Cora" / "raw", tmp_path / "Planetoid" / "Cora" / "raw")
    data, cora = load_dataset("pyg:Planetoid/Cora", tmp_path), load_dataset("cora", shared_datasets)
    assert torch.equal(data.x, cora.x) and torch.equal(data.y, cora.y)
    assert torch.equal(data.edge_index, cora.edge_index) and data.num_classes == 7


def test_pyg_wikics_reads_data_json(tmp_path, files):
    graph = files.Graph(seed=3)
    files.wikics(tmp_path / "WikiCS" / "raw" / "data.json", graph)
    _check_graph(load_dataset("pyg:WikiCS", tmp_path), graph)


def test_ogb_folder_reads_csv_gz(tmp_path, files):
    graph = files.Graph(seed=4)
    files.ogb(tmp_path / "ogbn_tiny", graph)
    _check_graph(load_dataset("ogb:ogbn-tiny", tmp_path), graph)


def test_ogb_refuses_multi_label_in_one_line(tmp_path, files):
    graph = files.Graph(seed=5)
    files.ogb(tmp_path / "ogbn_proteins", graph, labels=np.stack([graph.y % 2, (graph.y + 1) % 2], axis=1))
    with pytest.raises(ValueError, match="^[^\n]*2 label columns: a multi-label dataset[^\n]*$"):
        load_dataset("ogb:ogbn-proteins", tmp_path)


def test_ogb_refuses_unlabelled_nodes(tmp_path, files):
    graph = files.Graph(seed=5)
    labels = graph.y.astype(object)[:, None]
    labels[3, 0] = "nan"
    files.ogb(tmp_path / "ogbn_papers", graph, labels=labels)
    with pytest.raises(ValueError, match="leaves node 3 unlabelled"):
        load_dataset("ogb:ogbn-papers", tmp_path)


def test_ogb_node_count_must_agree(tmp_path, files):
    graph = files.Graph(seed=6)
    raw = files.ogb(tmp_path / "ogbn_tiny", graph)
    files.gz(raw / "num-node-list.csv.gz", f"{graph.nodes + 1}\n")
    with pytest.raises(ValueError, match=f"num-node-list.csv.gz says \\[{graph.nodes + 1}\\] nodes"):
        load_dataset("ogb:ogbn-tiny", tmp_path)


def test_npz_refuses_multi_label_matrix(tmp_path, files):
    graph = files.Graph(seed=7)
    labels = sp.csr_matrix(np.ones((graph.nodes, 2)))
    extra = {
        "labels_data": labels.data, "labels_indices": labels.indices,
        "labels_indptr": labels.indptr, "labels_shape": np.array(labels.shape),
    }  # fmt: skip
    path = files.benchmark_npz(tmp_path / "npz" / "multi.npz", graph, extra=extra)
    with np.load(path, allow_pickle=True) as archive:
        arrays = {key: archive[key] for key in archive.files if key != "labels"}
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="^[^\n]*gives node 0 2 classes; Stamen reads single-label[^\n]*$"):
        load_dataset("npz:multi", tmp_path)


@pytest.mark.parametrize(
    "name,folder,named",
    [
        ("npz:tiny", "npz", ["tiny.npz"]),
        ("pyg:Amazon/Computers", "Amazon/Computers/raw", ["amazon_electronics_computers.npz"]),
        ("pyg:Coauthor/Physics", "Coauthor/Physics/raw", ["ms_academic_phy.npz"]),
        ("pyg:CitationFull/Cora_ML", "CitationFull/cora_ml/raw", ["cora_ml.npz"]),
        ("pyg:Planetoid/CiteSeer", "Planetoid/CiteSeer/raw", ["ind.citeseer.x", "ind.citeseer.test.index"]),
        ("pyg:WikiCS", "WikiCS/raw", ["data.json"]),
        ("ogb:ogbn-arxiv", "ogbn_arxiv/raw", ["edge.csv.gz", "node-feat.csv.gz", "node-label.csv.gz"]),
    ],
)
def test_missing_files_are_one_line_naming_what_to_place(tmp_path, name, folder, named):
    with pytest.raises(FileNotFoundError) as error:
        load_dataset(name, tmp_path)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"dataset {name!r}: raw files missing: place ")
    assert f"under {tmp_path / folder}/ (Stamen never downloads)" in message
    assert all(file in message for file in named)


def test_only_the_missing_ogb_file_is_named(tmp_path, files):
    raw = files.ogb(tmp_path / "ogbn_tiny", files.Graph())
    (raw / "edge.csv.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"raw files missing: place edge.csv.gz under "):
        load_dataset("ogb:ogbn-tiny", tmp_path)


def test_a_file_dataset_needs_a_data_root(monkeypatch):
    monkeypatch.delenv("STAMEN_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="'npz:tiny' needs a data root"):
        load_dataset("npz:tiny")


@pytest.mark.parametrize("name", ["npz:tiny", "npz:cora_ml", "ogb:ogbn-arxiv", "ogb:ogbn-papers100M", *pyg_datasets()])
def test_the_run_config_accepts_every_form(name):
    assert RunConfig.from_flower({"dataset": name}).dataset == name


@pytest.mark.parametrize(
    "name,fragment",
    [
        ("pyg:Reddit", "Stamen reads the raw files of these PyG datasets only: pyg:Amazon/Computers"),
        ("pyg:Amazon/computers", "did you mean 'pyg:Amazon/Computers'?"),
        ("pyg:WikiCS/x", "did you mean 'pyg:WikiCS'?"),
        ("npz:../secret", "npz:STEM takes a file stem"),
        ("npz:a/b", "no folder"),
        ("npz:tiny.npz", "no .npz"),
        ("ogb:arxiv", "such as ogbn-arxiv"),
        ("ogb:ogbn-../x", "such as ogbn-arxiv"),
        ("hf:cora", "unknown dataset form 'hf:'"),
        ("cora-ml", "did you mean 'cora_ml'?"),
    ],
)
def test_the_run_config_refuses_a_bad_name_in_one_line(name, fragment):
    with pytest.raises(ValueError, match="^[^\n]*$") as error:
        RunConfig.from_flower({"dataset": name})
    assert fragment in str(error.value)


def test_stamen_config_lists_the_forms():
    accepts = KEYS["dataset"].accepted()
    assert accepts == accepted_datasets()
    for text in ("cora_ml", "npz:STEM", "ogb:ogbn-NAME", "pyg:CLASS/NAME", "Amazon/Computers|Photo", "WikiCS"):
        assert text in accepts


def test_a_dataset_slug_is_one_path_component():
    assert dataset_slug("pyg:Amazon/Computers") == "pyg-Amazon-Computers"
    assert dataset_slug("npz:cora_ml.v2") == "npz-cora_ml.v2" and dataset_slug("csbm") == "csbm"
