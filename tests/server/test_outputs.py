"""The run's figure: ``curves.png`` and ``curves.svg`` drawn with matplotlib from the rows alone."""

import math
import xml.etree.ElementTree as ElementTree

import matplotlib

from stamen.server import outputs
from stamen.server.curves import ACCURACIES, AUCS, curves_figure, curves_svg
from stamen.server.rundir import RUN_FILES

SVG = "{http://www.w3.org/2000/svg}"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _rows(rounds: int) -> list[dict]:
    rows = [{"round": 0, "global_val_acc": 0.1, "global_test_acc": 0.12}]
    for r in range(1, rounds + 1):
        rows.append({"round": r, "global_val_acc": 0.5 + r / 400, "global_test_acc": 0.5, "train_loss": 1 / r})
    rows[40]["global_val_acc"] = 0.99  # the best validation round
    return rows


def _texts(svg: str) -> list[str]:
    return ["".join(t.itertext()) for t in ElementTree.fromstring(svg).iter(f"{SVG}text")]


def _line(svg: str, key: str) -> str:
    """The path data of the line the SVG names ``key``."""
    (group,) = [g for g in ElementTree.fromstring(svg).iter(f"{SVG}g") if g.get("id") == key]
    return group.find(f"{SVG}path").get("d")


def test_the_curves_are_the_rows_with_the_best_validation_round_marked():
    svg = curves_svg(_rows(100), "fedavg <on> cora & co")
    texts = _texts(svg)  # well-formed, the title escaped
    assert "fedavg <on> cora & co" in texts and "best validation: round 40" in texts
    assert {"global model: test accuracy", "global model: validation accuracy"} <= set(texts)
    assert "train loss (weighted by training nodes)" in texts and "round" in texts
    assert _line(svg, "global_test_acc").count("L") == 100  # 101 rounds: a move and 100 line steps
    assert _line(svg, "train_loss").count("L") == 99  # round 0 has no loss
    assert "clients' own models: test accuracy" not in texts  # no local-model accuracy: no line, no legend
    figure = curves_figure(_rows(100), "best")
    (marker,) = [line for line in figure.axes[0].lines if line.get_gid() == "best-round"]
    assert marker.get_xdata()[0] == 40


def test_a_missing_or_nan_value_is_a_gap_not_a_point():
    rows = [{"round": r, "global_test_acc": 0.5, "global_val_acc": 0.5} for r in range(1, 11)]
    rows[4]["global_test_acc"] = math.nan
    del rows[5]["global_test_acc"]
    svg = curves_svg(rows, "gaps")
    assert _line(svg, "global_test_acc").count("M") == 2  # two segments: rounds 1-4 and 7-10
    assert "nan" not in svg.lower()


def test_a_run_without_rows_still_gets_a_valid_figure():
    assert _texts(curves_svg([], "empty")).count("nothing recorded") == 2


def test_test_and_validation_global_and_clients_models_read_apart_without_colour():
    keys = [series.key for series in ACCURACIES]
    rows = [{"round": r, "train_loss": 1 / r, **{key: 0.5 + r / 100 for key in keys}} for r in range(1, 11)]
    lines = {line.get_gid(): line for line in curves_figure(rows, "four").axes[0].lines}
    looks = {key: (lines[key].get_linestyle(), lines[key].get_marker()) for key in keys}
    assert looks == {"global_test_acc": ("-", "o"), "global_val_acc": ("--", "o"), "test_acc": ("-", "^"),
                     "val_acc": ("--", "^")}  # fmt: skip
    assert lines["global_test_acc"].get_color() != lines["test_acc"].get_color()
    assert len({series.label for series in AUCS}) == len(AUCS)


def test_every_label_lies_inside_the_figure_with_all_four_accuracies(tmp_path):
    keys = [series.key for series in ACCURACIES]
    rows = [{"round": r, "train_loss": 1 / r, **{key: 0.5 + r / 100 for key in keys}} for r in range(1, 11)]
    title = "a long title: " + "fedavg / gcn on cora, 10 clients, no privacy, seed 0; " * 3
    figure = curves_figure(rows, title)
    figure.canvas.draw()
    box = figure.bbox
    legend_texts = [t for axis in figure.axes for t in axis.get_legend().get_texts()]
    assert len(legend_texts) == 6  # four accuracies, the best round, the loss
    texts = [figure._suptitle, *legend_texts]
    for axis in figure.axes:
        texts += [axis.title, axis.xaxis.label, axis.yaxis.label]
        (x_low, x_high), (y_low, y_high) = axis.get_xlim(), axis.get_ylim()
        texts += [t for t in axis.get_xticklabels() if x_low <= t.get_position()[0] <= x_high]
        texts += [t for t in axis.get_yticklabels() if y_low <= t.get_position()[1] <= y_high]
    renderer = figure.canvas.get_renderer()
    for text in texts:
        extent = text.get_window_extent(renderer)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1, text


def test_a_run_writes_valid_png_and_svg_without_touching_matplotlib_settings(tmp_path):
    backend, fonttype = matplotlib.get_backend(), matplotlib.rcParams["svg.fonttype"]
    outputs.plot_curves(tmp_path, _rows(50), "written")
    assert (tmp_path / "curves.png").read_bytes().startswith(PNG_SIGNATURE)
    assert "written" in _texts((tmp_path / "curves.svg").read_text())
    assert {"curves.png", "curves.svg"} <= RUN_FILES  # a run directory's own files
    assert (matplotlib.get_backend(), matplotlib.rcParams["svg.fonttype"]) == (backend, fonttype)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging file left behind
