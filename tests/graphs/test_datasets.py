import numpy as np
import pytest
import torch

from stamen.graphs import load_dataset, make_csbm


def test_cora_loads_from_the_shared_root(shared_datasets):
    data = load_dataset("cora", shared_datasets)
    assert (data.num_nodes, data.num_features, data.num_classes) == (2708, 1433, 7)
    # undirected, no self-loops
    src, dst = data.edge_index
    assert not torch.any(src == dst)
    assert data.edge_index.size(1) == 2 * 5278


def test_cora_ml_loads_from_npz(shared_datasets):
    data = load_dataset("cora_ml", shared_datasets)
    assert (data.num_nodes, data.num_features, data.num_classes) == (2995, 2879, 7)


def test_missing_raw_files_name_them(tmp_path):
    with pytest.raises(FileNotFoundError, match="ind.cora.x"):
        load_dataset("cora", tmp_path)


def test_corrupt_raw_file_is_a_clear_error(tmp_path, shared_datasets):
    raw = tmp_path / "Cora" / "raw"
    raw.mkdir(parents=True)
    for source in (shared_datasets / "Cora" / "raw").iterdir():
        (raw / source.name).write_bytes(source.read_bytes())
    (raw / "ind.cora.graph").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="could not read the raw files"):
        load_dataset("cora", tmp_path)


def test_corrupt_npz_is_a_clear_error(tmp_path):
    (tmp_path / "npz").mkdir()
    np.savez(tmp_path / "npz" / "cora_ml.npz", labels=np.zeros(3))
    with pytest.raises(ValueError, match="not a readable graph"):
        load_dataset("cora_ml", tmp_path)


def test_unknown_dataset_lists_the_accepted_names():
    with pytest.raises(ValueError, match="csbm, cora"):
        load_dataset("imagenet")


def test_csbm_is_deterministic_by_seed():
    a, b, c = make_csbm(num_nodes=300, seed=1), make_csbm(num_nodes=300, seed=1), make_csbm(num_nodes=300, seed=2)
    assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
    assert not torch.equal(a.edge_index, c.edge_index)


def test_csbm_has_the_requested_degree_and_homophily():
    data = make_csbm(num_nodes=3000, num_classes=7, avg_degree=8.0, homophily=0.8, seed=0)
    degree = data.edge_index.size(1) / data.num_nodes
    src, dst = data.edge_index
    homophily = float((data.y[src] == data.y[dst]).float().mean())
    assert degree == pytest.approx(8.0, rel=0.05)
    assert homophily == pytest.approx(0.8, abs=0.02)


def test_default_csbm_needs_the_graph_a_gcn_beats_an_mlp():
    from stamen.graphs import split_masks
    from stamen.models import build_model
    from stamen.models.training import evaluate, fit

    data = make_csbm(num_nodes=1500)
    data.train_mask, data.val_mask, data.test_mask = split_masks(data.num_nodes, 0.6, 0.2, seed=0)
    accuracy = {}
    for name in ("gcn", "mlp"):
        torch.manual_seed(0)
        model = build_model(name, data.num_features, data.num_classes)
        fit(model, data, 100, torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4))
        result = evaluate(model, data)
        accuracy[name] = result.test_correct / result.num_test
    assert accuracy["gcn"] > accuracy["mlp"] + 0.3
