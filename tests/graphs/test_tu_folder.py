"""tu:NAME reads the TU layout with numpy: graphs, renumbered classes, features from attributes and node
labels (else degrees); a file that does not fit is one line naming it, and the command exits 2."""

from pathlib import Path

import pytest
import torch

from stamen.cli.main import main as stamen
from stamen.graphs.graph_set_clients import load_graph_set
from stamen.graphs.graph_sets import MAX_DEGREE

# Six graphs over 18 nodes: triangles (class label 5) and 3-node paths (class label -1), both directions of
# each edge listed as TU files do.
TRIANGLE = [(1, 2), (2, 3), (1, 3)]
PATH = [(1, 2), (2, 3)]


def write_tu(root: Path, name: str = "TINY", *, labels: bool = True, attributes: bool = True, edit=None) -> Path:
    """The TU files of six small graphs under ``root/name/raw`` (``edit(files)`` changes them first)."""
    edges, indicator, graph_labels, node_labels, node_attributes = [], [], [], [], []
    for g in range(6):
        offset, shape = 3 * g, TRIANGLE if g % 2 == 0 else PATH
        edges += [(offset + i, offset + j) for i, j in shape] + [(offset + j, offset + i) for i, j in shape]
        indicator += [g + 1] * 3
        graph_labels.append(5 if g % 2 == 0 else -1)
        node_labels += [7, 8, 7]
        node_attributes += [(0.5, -1.0)] * 3
    files = {
        "A": "\n".join(f"{i}, {j}" for i, j in edges),
        "graph_indicator": "\n".join(map(str, indicator)),
        "graph_labels": "\n".join(map(str, graph_labels)),
    }
    if labels:
        files["node_labels"] = "\n".join(map(str, node_labels))
    if attributes:
        files["node_attributes"] = "\n".join(f"{a}, {b}" for a, b in node_attributes)
    if edit is not None:
        edit(files)
    folder = root / name / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    for part, text in files.items():
        (folder / f"{name}_{part}.txt").write_text(text + "\n")
    return root


def test_the_graphs_classes_and_features_are_read(tmp_path):
    graphs = load_graph_set("tu:TINY", str(write_tu(tmp_path)), seed=0)
    assert len(graphs) == 6
    assert [int(g.y) for g in graphs] == [1, 0, 1, 0, 1, 0]  # -1 -> 0, 5 -> 1 (sorted)
    assert [g.edge_index.size(1) for g in graphs] == [6, 4, 6, 4, 6, 4]  # undirected, per graph, 0-based
    assert all(int(g.edge_index.max()) < 3 and g.num_nodes == 3 for g in graphs)
    # attributes, then the node labels one-hot (7 -> column 0, 8 -> column 1)
    assert torch.equal(graphs[0].x, torch.tensor([[0.5, -1.0, 1, 0], [0.5, -1.0, 0, 1], [0.5, -1.0, 1, 0]]))


def test_without_node_features_the_degree_is_one_hot(tmp_path):
    graphs = load_graph_set("tu:TINY", str(write_tu(tmp_path, labels=False, attributes=False)), seed=0)
    assert graphs[1].x.shape == (3, MAX_DEGREE + 1)
    assert graphs[1].x.argmax(dim=1).tolist() == [1, 2, 1]  # a path's ends and middle


def _edit(part: str, text: str):
    def edit(files):
        files[part] = text

    return edit


def _append(part: str, line: str):
    def edit(files):
        files[part] += "\n" + line

    return edit


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_append("A", "18, 19"), "TINY_A.txt has node ids outside 1..18"),
        (_append("A", "1, 4"), "TINY_A.txt has an edge between nodes of two graphs"),
        (_append("A", "1, x"), "TINY_A.txt is not comma-separated integers"),
        (_append("A", "1, 2, 3"), "TINY_A.txt is not comma-separated integers"),
        (_append("graph_indicator", "7"), "TINY_graph_indicator.txt has graph ids outside 1..6"),
        (_edit("graph_indicator", "\n".join(["1"] * 3 + ["2"] * 15)), "gives graph 3 no node"),
        (_append("node_labels", "7"), "TINY_node_labels.txt has 19 lines for 18 nodes"),
        (_append("node_attributes", "nan, 1"), "TINY_node_attributes.txt needs 18 lines of finite numbers"),
        (_edit("graph_labels", ""), "TINY_graph_labels.txt is empty"),
    ],
)
def test_a_file_that_does_not_fit_is_one_line_naming_it(tmp_path, edit, named):
    with pytest.raises(ValueError) as refused:
        load_graph_set("tu:TINY", str(write_tu(tmp_path, edit=edit)), seed=0)
    assert named in str(refused.value) and "\n" not in str(refused.value)
    assert str(refused.value).startswith("dataset 'tu:TINY': ")


def test_a_missing_file_is_named_with_its_folder(tmp_path):
    root = write_tu(tmp_path)
    (root / "TINY" / "raw" / "TINY_graph_labels.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"raw files missing: place TINY_graph_labels.txt under .*TINY/raw/"):
        load_graph_set("tu:TINY", str(root), seed=0)


def test_the_command_refuses_a_bad_index_in_one_line_with_exit_2(tmp_path, capsys):
    root = write_tu(tmp_path / "data", edit=_append("A", "18, 19"))
    out = tmp_path / "runs"
    code = stamen(
        ["run", "--engine", "inprocess", "--clients", "2", "-c", "task='graph-classification' dataset='tu:TINY' "
         f"partitioner='random' model='gin' data-root='{root}' output-dir='{out}'"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "TINY_A.txt has node ids outside 1..18" in err
    assert not out.exists() or not any(out.iterdir())  # nothing created before the refusal
