"""``stamen bench plot RECORD``: a record's picture from the record alone; other records refused in one line."""

import json

import pytest

from stamen.benches.plots import algorithms_figure
from stamen.cli.main import main as stamen


def _result(algorithm, seed, global_acc, clients_acc):
    best = {"global_test_acc": global_acc, "test_acc": clients_acc}
    return {"algorithm": algorithm, "dataset": "cora", "partitioner": "louvain", "seed": seed, "status": "ran",
            "best": best, "final": best}  # fmt: skip


RECORD = {
    "bench": "algorithms",
    "name": "tiny",
    "setting": {"clients": 10, "rounds": 5},
    "results": [
        _result("fedavg", 0, 0.80, 0.82),
        _result("fedavg", 1, 0.84, 0.86),
        _result("ditto", 0, 0.80, 0.90),
        _result("ditto", 1, 0.84, 0.92),
    ],  # fmt: skip
}


def test_an_algorithms_record_draws_each_model_with_its_headline_filled(tmp_path):
    figure = algorithms_figure(RECORD)
    (axis,) = figure.axes
    points = {}
    for container in axis.containers:  # one errorbar per (algorithm, model)
        line = container.lines[0]
        x, y = line.get_xdata()[0], line.get_ydata()[0]
        points[round(y, 2)] = (round(x, 6), line.get_markerfacecolor() != "white", line.get_marker())
    # rows: fedavg at 0, ditto at 1; the global model's point above (-0.15), the clients' below (+0.15)
    assert points == {-0.15: (82.0, True, "o"), 0.15: (84.0, False, "s"), 0.85: (82.0, False, "o"),
                      1.15: (91.0, True, "s")}  # fmt: skip
    assert [t.get_text() for t in axis.get_yticklabels()] == ["fedavg", "ditto"]
    assert "not from 0" in axis.get_xlabel()
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(RECORD))
    assert stamen(["bench", "plot", str(path)]) == 0
    assert (tmp_path / "tiny.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"bench": "sim", "results": []}, "a 'sim' record has no picture; pictures: algorithms"),
        ({"name": "x"}, "not a benchmark record (no results)"),
        ("not json", "not a readable benchmark record"),
    ],
)
def test_a_record_without_a_picture_is_one_line_exit_2(tmp_path, capsys, content, message):
    path = tmp_path / "r.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    assert stamen(["bench", "plot", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err
    assert not (tmp_path / "r.png").exists()


def test_a_picture_is_never_written_through_a_link(tmp_path, capsys):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(RECORD))
    kept = tmp_path / "kept.png"
    kept.write_bytes(b"the user's own")
    (tmp_path / "tiny.png").symlink_to(kept)
    assert stamen(["bench", "plot", str(path)]) == 2
    assert "is a link or not a regular file" in capsys.readouterr().err
    assert kept.read_bytes() == b"the user's own"
