"""The run's figure: ``curves.svg`` drawn from the rows alone, without matplotlib."""

import math
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

from stamen.server.curves import _ticks, curves_svg

SVG = "{http://www.w3.org/2000/svg}"


def _rows(rounds: int) -> list[dict]:
    rows = [{"round": 0, "global_val_acc": 0.1, "global_test_acc": 0.12}]
    for r in range(1, rounds + 1):
        rows.append({"round": r, "global_val_acc": 0.5 + r / 400, "global_test_acc": 0.5, "train_loss": 1 / r})
    rows[40]["global_val_acc"] = 0.99  # the best validation round
    return rows


def _lines(svg: str, colour: str) -> list[list[tuple[float, float]]]:
    root = ElementTree.fromstring(svg)
    return [
        [tuple(float(v) for v in pair.split(",")) for pair in line.get("points").split()]
        for line in root.iter(f"{SVG}polyline")
        if line.get("stroke") == colour
    ]


def test_the_curves_are_the_rows_with_the_best_validation_round_marked():
    svg = curves_svg(_rows(100), "fedavg <on> cora & co")
    root = ElementTree.fromstring(svg)  # well-formed, the title escaped
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert "fedavg <on> cora & co" in texts and "best validation: round 40" in texts
    (test,) = _lines(svg, "#1f77b4")
    (validation,) = _lines(svg, "#17becf")
    (loss,) = _lines(svg, "#9467bd")
    assert len(test) == len(validation) == 101 and len(loss) == 100  # round 0 has no loss
    assert min(y for _, y in validation) == validation[40][1]  # highest on screen: the best round
    xs = [x for x, _ in test]
    assert xs == sorted(xs) and len(set(xs)) == 101
    assert not _lines(svg, "#2ca02c")  # no local-model accuracy in these rows: no line, no legend
    assert "client test accuracy (local models)" not in texts
    assert root.findall(f"{SVG}circle") == []  # over 30 points: lines only


def test_a_missing_or_nan_value_is_a_gap_not_a_point():
    rows = [{"round": r, "global_test_acc": 0.5, "global_val_acc": 0.5} for r in range(1, 11)]
    rows[4]["global_test_acc"] = math.nan
    del rows[5]["global_test_acc"]
    svg = curves_svg(rows, "gaps")
    assert [len(segment) for segment in _lines(svg, "#1f77b4")] == [4, 4]
    assert "nan" not in svg.lower() and "inf" not in svg.lower()
    assert len(ElementTree.fromstring(svg).findall(f"{SVG}circle")) == 18  # few points: each one marked


def test_a_run_without_rows_still_gets_a_valid_figure():
    root = ElementTree.fromstring(curves_svg([], "empty"))
    assert ["".join(t.itertext()) for t in root.iter(f"{SVG}text")].count("nothing recorded") == 2


def test_ticks_are_round_numbers_that_cover_the_values():
    assert _ticks(1, 100, whole=True) == [0, 20, 40, 60, 80, 100]
    assert _ticks(3, 3, whole=True) == [2, 3, 4]
    ticks = _ticks(0.153, 0.861, whole=False)
    assert ticks[0] <= 0.153 and ticks[-1] >= 0.861 and len(ticks) <= 8
    assert all(math.isclose(b - a, 0.2) for a, b in zip(ticks, ticks[1:]))


@pytest.mark.slow
def test_a_run_writes_its_curves_without_importing_matplotlib(tmp_path):
    code = f"""
import sys
from pathlib import Path
from stamen.server import outputs
outputs.plot_curves(Path({str(tmp_path)!r}), [{{"round": 1, "global_val_acc": 0.5}}], "test")
assert "matplotlib" not in sys.modules
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "curves.svg").read_text().startswith("<svg ")


def test_a_resumed_run_of_an_earlier_version_loses_its_stale_png(tmp_path):
    from stamen.server import outputs

    (tmp_path / "curves.png").write_bytes(b"\x89PNG drawn before the run was resumed")
    outputs.plot_curves(tmp_path, [{"round": 1, "global_val_acc": 0.5}], "resumed")
    assert not (tmp_path / "curves.png").exists() and (tmp_path / "curves.svg").is_file()


def test_every_label_lies_inside_the_figure_with_all_four_accuracies():
    keys = ("global_test_acc", "global_val_acc", "test_acc", "val_acc", "train_loss")
    svg = curves_svg([{"round": r, **{key: 0.5 + r / 100 for key in keys}} for r in range(1, 11)], "four")
    root = ElementTree.fromstring(svg)
    width, height = float(root.get("width")), float(root.get("height"))
    texts = [t for t in root.iter(f"{SVG}text") if t.get("transform") is None]
    assert len([t for t in texts if "accuracy (" in (t.text or "") or "accuracy" == (t.text or "")]) >= 2
    assert all(0 < float(t.get("x")) < width and 12 <= float(t.get("y")) <= height - 5 for t in texts)
