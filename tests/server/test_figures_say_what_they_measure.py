"""Figures that say what they measure: distinct tick labels, the best round inside the
plot box, titles naming the run's algorithm, model, dataset, privacy and seed, and a summary that names how
each accuracy pools and shows only the evaluation settings the run turned on."""

import dataclasses
import xml.etree.ElementTree as ElementTree

import pytest

from stamen.contract.run_config import RunConfig
from stamen.server.curves import curves_figure, curves_svg
from stamen.server.outputs import run_title, summarize, summary_lines, summary_table

SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[str]:
    return ["".join(t.itertext()) for t in ElementTree.fromstring(svg).iter(f"{SVG}text")]


def test_a_near_flat_loss_gets_distinct_tick_labels_true_to_their_ticks():
    rows = [{"round": r, "global_val_acc": 0.5, "train_loss": 1.9655 + 0.0006 * r} for r in range(1, 11)]
    figure = curves_figure(rows, "flat")
    figure.canvas.draw()
    loss = figure.axes[1]
    low, high = loss.get_ylim()
    shown = [(t.get_text(), t.get_position()[1]) for t in loss.get_yticklabels() if low <= t.get_position()[1] <= high]
    labels = [text.replace("\u2212", "-") for text, _ in shown]
    assert len(labels) >= 3 and len(set(labels)) == len(labels)
    assert all(float(label) == pytest.approx(tick, abs=1e-9) for label, (_, tick) in zip(labels, shown, strict=True))
    assert all(1.96 <= float(label) <= 1.975 for label in labels)  # full values, no offset


def test_the_best_round_marker_lies_inside_the_plot_box_when_it_is_the_last_round():
    rows = [{"round": r, "global_val_acc": r / 10, "global_test_acc": r / 10} for r in range(1, 11)]
    axis = curves_figure(rows, "last").axes[0]
    (marker,) = [line for line in axis.lines if line.get_gid() == "best-round"]
    low, high = axis.get_xlim()
    assert low < marker.get_xdata()[0] == 10 < high  # not on the frame's right edge
    assert "best validation: round 10" in _texts(curves_svg(rows, "last"))


def test_the_title_names_algorithm_model_dataset_privacy_and_seed():
    config = RunConfig(algorithm="fedprox", model="sage", dataset="csbm", seed=7, privacy="dp-sgd",
                       noise_multiplier=1.3)  # fmt: skip
    title = run_title("r1", config, 3)
    for part in ("r1", "fedprox", "sage", "csbm", "3 clients", "dp-sgd", "noise 1.3", "seed 7"):
        assert part in title
    assert "no privacy" in run_title("r2", RunConfig(), 10)
    assert title in _texts(curves_svg([{"round": 1, "global_val_acc": 0.5}], title))


def _rows():
    per_client = {"0": {"global_test_acc": 0.5}, "1": {"global_test_acc": 0.7}}
    figures = {"global_test_acc": 0.6, "global_val_acc": 0.6, "global_missing_class_acc": 0.0}
    return [{"round": 1, "clients": 2, "seconds": 0.1, "client_train_seconds_max": 0.1, **figures,
             "per_client": per_client}]  # fmt: skip


@pytest.mark.parametrize("missing", [0, 1])
def test_a_setting_is_shown_only_when_the_run_turned_it_on(missing):
    summary = summarize(_rows(), 1.0, dataclasses.replace(RunConfig(), missing_classes=missing))
    labels = [label for label, _, _ in summary_table(summary)]
    assert any("missing-class" in label for label in labels) == (missing > 0)
    assert summary["settings"] == (["missing-class"] if missing else [])


def test_pooled_and_per_client_means_are_named_apart():
    summary = summarize(_rows(), 1.0, RunConfig())
    labels = [label for label, _, _ in summary_table(summary)]
    assert "global test accuracy (pooled over all clients' test nodes)" in labels
    (spread,) = [line for line in summary_lines(summary) if "per client" in line]
    assert "mean over clients 0.600" in spread and "pooled" not in spread


@pytest.mark.parametrize(("task", "unit"), [("node-classification", "nodes"), ("graph-classification", "graphs")])
def test_an_accuracy_names_what_it_is_pooled_over(task, unit):
    summary = summarize(_rows(), 1.0, RunConfig())
    summary["task"] = task  # as a graph-classification run's summary records it
    labels = [label for label, _, _ in summary_table(summary)]
    assert f"global test accuracy (pooled over all clients' test {unit})" in labels
    (spread,) = [line for line in summary_lines(summary) if "per client" in line]
    assert f"each on its own test {unit})" in spread
