"""``stamen bench plot RECORD``: a record's picture from the record alone; other records refused in one line."""

import json
import re
import struct
from pathlib import Path

import pytest

from stamen.benches.plots import FIGURES
from stamen.benches.plots.algorithms import algorithms_figure
from stamen.benches.plots.common import measured_where
from stamen.cli.main import main as stamen
from stamen.common.pictures import DPI

ROOT = Path(__file__).resolve().parents[2]
MACHINE = {"platform": "Linux-test", "cpus": 2, "torch": "2.13.0+cpu", "flwr": "1.42.0"}


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


def _sim_entry(clients, flower, floor, library):
    """A ``sim`` job with a plain loop, both engines, three repeats and both Flower floors."""
    return {
        "algorithm": "fedavg",
        "clients": clients,
        "in_process": {"wall_seconds": 2.0},
        "inprocess_engine": {"total_wall_seconds": 2.5},
        "inprocess_engine_in_turn": {"total_wall_seconds": 3.0},
        "flwr_run": {"total_wall_seconds": flower},
        "repeats": {"in_process": [1.9, 2.0, 2.2], "inprocess_engine": [2.4, 2.5, 2.9], "inprocess_engine_in_turn": []},
        "engine_ratio": 1.25,
        "engine_in_turn_ratio": 1.5,
        "wall_ratio": flower / 2.0,
        "flower_floor": {"wall_seconds": floor, "ratio": flower / floor},
        "library_floor": {"wall_seconds": library, "ratio": flower / library},
        "flower_repeats": [
            {"total_wall_seconds": flower - 1, "floor_wall_seconds": floor, "library_floor_wall_seconds": library},
            {"total_wall_seconds": flower, "floor_wall_seconds": floor + 1, "library_floor_wall_seconds": library - 1},
        ],
    }


def _scale_entry(nodes, clients, engine, seconds, status="finished"):
    return {"nodes": nodes, "clients": clients, "engine": engine, "status": status, "command_seconds": seconds,
            "partition_seconds": seconds / 3, "seconds_per_round": seconds / 10}  # fmt: skip


def _deploy_run(wall, per_round, **more):
    return {"total_wall_seconds": wall, "per_round": {"seconds": per_round}, **more}


SMALL = {
    "algorithms": RECORD,
    "sim": {"bench": "sim", "name": "tiny-sim", "setting": {"dataset": "csbm", "rounds": 5},
            "results": [_sim_entry(3, 20.0, 15.0, 18.0), _sim_entry(10, 22.0, 16.0, 19.0)]},
    "scale": {"bench": "scale", "name": "tiny-scale", "setting": {"rounds": 3, "partitioner": "metis"},
              "results": [_scale_entry(1000, 10, "inprocess", 4.0), _scale_entry(1000, 100, "inprocess", 6.0),
                          _scale_entry(1000, 10, "flower", 20.0), _scale_entry(9000, 10, "flower", 0, "timeout")]},
    "dpsgd": {"bench": "dpsgd", "name": "tiny-dp", "setting": {"dataset": "cora", "clients": 4, "repeats": 3},
              "results": [{"model": "sgc", "no_dp_seconds": 0.3, "dp_sgd_seconds": 0.4, "opacus_seconds": 1.2,
                           "ratio_dp_sgd": 4 / 3, "ratio_opacus": 4.0, "epsilon_dp_sgd": 7.5, "epsilon_opacus": 7.5}]},
    "deploy": {"bench": "deploy", "name": "tiny-deploy", "setting": {},
               "results": [{"nodes": n, "rounds": 5, "simulation": _deploy_run(10.0 + n, 0.2),
                            "deployment": _deploy_run(20.0 + 3 * n, 1.5, set_up_seconds=n, mode="processes")}
                           for n in (3, 10)]},
}  # fmt: skip


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _texts(figure) -> str:
    texts = " ".join(t.get_text() for t in figure.findobj(lambda o: hasattr(o, "get_text")))
    return " ".join(texts.split())  # a title wrapped over lines reads as one


def test_every_bench_with_a_picture_has_a_small_record_here():
    assert sorted(SMALL) == sorted(FIGURES)


@pytest.mark.parametrize("bench", sorted(SMALL))
def test_a_small_record_of_each_kind_draws_a_png_of_its_figures_size(tmp_path, bench):
    record = {**SMALL[bench], "date": "2031-01-02T03:04:05", "machine": MACHINE, "code": "abc1234"}
    figure = FIGURES[bench](record)
    width, height = (figure.get_size_inches() * DPI).tolist()
    text = _texts(figure)
    assert record["name"] in text and "2031-01-02" in text and "2 CPUs" in text and "code abc1234" in text
    path = tmp_path / f"{bench}.json"
    path.write_text(json.dumps(record))
    assert stamen(["bench", "plot", str(path)]) == 0
    png_width, png_height = _png_size((tmp_path / f"{bench}.png").read_bytes())
    # the saved picture is the figure's canvas, cut to what it draws (never a thumbnail, never a blank page)
    assert 0.75 * width <= png_width <= 1.1 * width and 0.75 * height <= png_height <= 1.25 * height


def test_a_sim_picture_draws_each_engine_and_floor_with_its_repeats_spread():
    figure = FIGURES["sim"](SMALL["sim"])
    speed, floor = figure.axes
    labels = [t.get_text() for t in speed.get_yticklabels()]
    assert labels[:4] == ["3 clients: plain loop", "3 clients: in-process engine",
                          "3 clients: in-process, clients in turn", "3 clients: Flower engine"]  # fmt: skip
    assert speed.get_xscale() == "log" and "wall s" in speed.get_xlabel()
    bars = [c for c in speed.containers if c.has_xerr]
    # plain loop, in-process engine and Flower have two or more repeats; clients in turn has none
    assert len(bars) == 6
    plain = bars[0].lines[2][0].get_segments()[0]
    assert plain[0][0] == pytest.approx(1.9) and plain[1][0] == pytest.approx(2.2)
    notes = _texts(floor)
    assert "Stamen / floor 1.33x" in notes and "Stamen / library floor 1.11x" in notes  # 20/15, 20/18


def test_a_scale_picture_draws_a_curve_per_engine_and_size_and_counts_the_unfinished():
    figure = FIGURES["scale"](SMALL["scale"])
    wall = figure.axes[0]
    curves = {line.get_label(): line for line in wall.get_lines() if not line.get_label().startswith("_")}
    assert list(curves["inprocess, 1,000 nodes"].get_xdata()) == [10_000, 100_000]
    assert list(curves["inprocess, 1,000 nodes"].get_ydata()) == [4.0, 6.0]
    assert list(curves["flower, 1,000 nodes"].get_ydata()) == [20.0]
    assert not any("9,000" in label for label in curves)
    assert "1 run(s) not finished" in " ".join(figure.get_suptitle().split())
    assert wall.get_xscale() == "log" and wall.get_yscale() == "log"


def test_a_dpsgd_picture_prints_each_variants_time_and_ratio():
    figure = FIGURES["dpsgd"](SMALL["dpsgd"])
    (axis,) = figure.axes
    labels = [t.get_text() for t in axis.get_yticklabels()]
    assert labels == ["sgc: no DP", "sgc: Stamen's DP-SGD", "sgc: Opacus DP-SGD"]
    assert re.search(r"0\.4 s\s+1\.33x no DP", _texts(axis)) and "4.00x no DP" in _texts(axis)
    assert "epsilon spent: 7.5" in " ".join(figure.get_suptitle().split())


def test_a_deploy_picture_draws_both_modes_per_node_count():
    figure = FIGURES["deploy"](SMALL["deploy"])
    wall, per_round = figure.axes
    lines = {line.get_label(): line for line in wall.get_lines()}
    assert list(lines["simulation"].get_ydata()) == [13.0, 20.0]
    assert list(lines["deployment"].get_ydata()) == [29.0, 50.0]
    assert list(lines["deployment's set-up"].get_ydata()) == [3, 10]
    assert list({line.get_label(): line for line in per_round.get_lines()}["deployment"].get_ydata()) == [1.5, 1.5]


def test_a_picture_says_where_and_when_from_the_records_provenance():
    record = {"provenance": {"date": "2030-05-06T07:08:09+00:00", "commit": "feed123", "platform": "Linux-x"},
              "machine": {"cpus": 16, "gpu": "NVIDIA H100"}, "date": "2099-01-01"}  # fmt: skip
    where = measured_where(record)
    assert where.startswith("measured 2030-05-06") and "16 CPUs" in where and "NVIDIA H100" in where
    assert "Linux-x" in where and "code feed123" in where


# the records the README's index names a picture for; drawn here from the committed files, nothing run
HEADLINE = (
    "speed-cora-behind", "flower-floor-csbm-repeats", "scale-1m-1000-clients-cold", "scale-1000-clients-flower",
    "scale-10m-nodes-run", "scale", "dpsgd-cora-sparse", "deploy-nodes-packed", "algorithms-cora", "algorithms-csbm",
    "algorithms-cora-dirichlet", "algorithms-graph-classification-synth", "graph-classification-mutag",
)  # fmt: skip


def test_every_committed_headline_record_of_the_index_is_drawn(tmp_path):
    index = (ROOT / "benchmarks" / "README.md").read_text()
    for name in HEADLINE:
        assert f"[{name}.png]({name}.png)" in index, name
        out = tmp_path / f"{name}.png"
        assert stamen(["bench", "plot", str(ROOT / "benchmarks" / f"{name}.json"), "--out", str(out)]) == 0, name
        width, height = _png_size(out.read_bytes())
        assert width > 400 and height > 200, name
        assert (ROOT / "benchmarks" / f"{name}.png").is_file(), name


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
        ({"bench": "unlearn", "results": []}, "a 'unlearn' record has no picture; pictures: algorithms, sim"),
        ({"bench": "algorithms", "setting": {"task": "link-prediction"}, "results": []}, "AUC, AP and Hits@K"),
        ({"bench": "sim", "name": "x", "results": [{"algorithm": "fedavg", "clients": 3}]}, "nothing to draw"),
        ({"bench": "scale", "results": [{"status": "finished", "command_seconds": 1.0}]}, "without the figures"),
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
