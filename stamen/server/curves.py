"""``curves.png`` and ``curves.svg``: a run's accuracy and loss per round, drawn with matplotlib.

Two panels side by side. Left: the accuracies the rows hold (the global model's test and
validation accuracy, the clients' own models' test and validation accuracy), with the best
validation round (the round :func:`stamen.server.outputs.summarize` selects) marked by a grey
vertical line. Right: the training loss (weighted by training nodes). The rounds run along
both x axes, ticks on whole rounds; a near-flat loss keeps its full values on the ticks
(1.965, 1.966, ..., never an offset).

The series read apart without colour: test lines are solid and validation lines dashed; the
global model's lines carry circles and the clients' models' lines triangles (a marker every
few rounds on a long run). The colours are colour-blind-safe (:mod:`stamen.common.pictures`).

A link-prediction run (no accuracy) draws its AUCs in the left panel instead (test,
validation and cut edges; the best round is then the one of best validation AUC).

A value that is missing or not finite leaves a gap in its line, never a point at zero.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from stamen.common.pictures import BLACK, BLUE, GREEN, VERMILLION, figure_bytes, new_figure
from stamen.contract.figures import (
    GLOBAL_TEST_ACC,
    GLOBAL_TEST_AUC,
    GLOBAL_VAL_ACC,
    GLOBAL_VAL_AUC,
    TEST_ACC,
    TEST_AUC,
    TRAIN_LOSS,
    VAL_ACC,
    VAL_AUC,
    Row,
    headline_keys,
    link_figure,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


class Series(NamedTuple):
    """One line of the figure: the row key it draws, its legend label and how it looks."""

    key: str
    label: str
    colour: str
    style: str  # "solid": test edges/nodes, "dashed": validation, "dotted": cut edges
    marker: str  # "o": the global model, "^": the clients' own models


ACCURACIES = (
    Series(GLOBAL_TEST_ACC, "global model: test accuracy", BLUE, "solid", "o"),
    Series(GLOBAL_VAL_ACC, "global model: validation accuracy", BLUE, "dashed", "o"),
    Series(TEST_ACC, "clients' own models: test accuracy", VERMILLION, "solid", "^"),
    Series(VAL_ACC, "clients' own models: validation accuracy", VERMILLION, "dashed", "^"),
)
AUCS = (
    Series(GLOBAL_TEST_AUC, "global model: test AUC", BLUE, "solid", "o"),
    Series(GLOBAL_VAL_AUC, "global model: validation AUC", BLUE, "dashed", "o"),
    Series(link_figure("cut", "auc", True), "global model: cut-edge AUC", GREEN, "dotted", "s"),
    Series(TEST_AUC, "clients' own models: test AUC", VERMILLION, "solid", "^"),
    Series(VAL_AUC, "clients' own models: validation AUC", VERMILLION, "dashed", "^"),
)
LOSS = Series(TRAIN_LOSS, "train loss (weighted by training nodes)", BLACK, "solid", "")

WIDTH, HEIGHT = 11.0, 4.8  # inches: two panels and a legend under each
MARKS = 12  # at most about this many markers on a line (a marker on every point of a short run)
TITLE_WIDTH = 110  # characters of the title per line


def curves_figure(rows: Sequence[Row], title: str, headline: str = "acc") -> Figure:
    """The figure of ``rows`` (a run's ``metrics.jsonl``), titled ``title``; ``headline``: the task's spec's
    headline figure (``auc``: the AUCs are drawn in place of accuracies)."""
    figure = new_figure(WIDTH, HEIGHT)
    figure.suptitle(textwrap.fill(title, TITLE_WIDTH), fontsize=12)
    left, right = figure.subplots(1, 2)
    drawn = [(series, points) for series in ACCURACIES if (points := _points(rows, series.key))]
    figure_name = "accuracy"
    if headline == "auc":  # the task's headline figure (its spec's): its AUCs
        drawn = [(series, points) for series in AUCS if (points := _points(rows, series.key))]
        figure_name = "AUC" if drawn else figure_name
    loss = [(LOSS, points) for points in [_points(rows, LOSS.key)] if points]
    _panel(left, f"{figure_name} per round", figure_name, drawn, _best_round(rows))
    _panel(right, "training loss per round", "train loss", loss, None)
    return figure


def curves_png(rows: Sequence[Row], title: str, headline: str = "acc") -> bytes:
    """``curves.png``: the figure of ``rows`` as PNG bytes."""
    return figure_bytes(curves_figure(rows, title, headline), "png")


def curves_svg(rows: Sequence[Row], title: str, headline: str = "acc") -> str:
    """``curves.svg``: the figure of ``rows`` as an SVG document (its text kept as text)."""
    return figure_bytes(curves_figure(rows, title, headline), "svg").decode()


def _points(rows: Sequence[Row], key: str) -> list[tuple[float, float]]:
    """``(round, value)`` of every row with ``round``; NaN where ``key`` is missing or not finite (a gap)."""
    points: list[tuple[float, float]] = []
    for row in rows:
        if "round" not in row:
            continue
        value = row.get(key)
        finite = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        points.append((float(row["round"]), float(value) if finite else math.nan))
    return points if any(not math.isnan(value) for _, value in points) else []


def _best_round(rows: Sequence[Row]) -> float | None:
    """The round with the highest validation accuracy (link prediction: AUC; the global model's where there is one)."""
    selector = next((key for key in headline_keys("val") if any(key in r for r in rows)), VAL_ACC)
    scored = [r for r in rows if isinstance(r.get(selector), int | float) and "round" in r]
    return float(max(scored, key=lambda r: r[selector])["round"]) if scored else None


def _panel(
    axis: Axes, title: str, y_label: str, lines: list[tuple[Series, list[tuple[float, float]]]], best: float | None
) -> None:
    # on use: matplotlib stays out of this module's import
    from matplotlib.ticker import MaxNLocator

    axis.set_title(title, fontsize=11)
    axis.set_xlabel("round")
    axis.set_ylabel(y_label)
    if not lines:
        axis.text(0.5, 0.5, "nothing recorded", ha="center", va="center", transform=axis.transAxes, color="dimgrey")
        axis.set_xticks([])
        axis.set_yticks([])
        return
    for series, points in lines:
        every = max(1, math.ceil(len(points) / MARKS))
        (line,) = axis.plot(
            [r for r, _ in points],
            [v for _, v in points],
            color=series.colour,
            linestyle=series.style,
            marker=series.marker or None,
            markevery=every,
            markersize=5,
            linewidth=1.6,
            label=series.label,
        )
        line.set_gid(series.key)  # the SVG names each line by its row key
    if best is not None:
        marker = axis.axvline(
            best, color="grey", linestyle="dashdot", linewidth=1.0, label=f"best validation: round {best:g}"
        )
        marker.set_gid("best-round")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    axis.ticklabel_format(axis="y", useOffset=False, style="plain")
    axis.grid(alpha=0.3)
    handles, labels = axis.get_legend_handles_labels()  # two columns: the global model's, the clients' models'
    order = sorted(range(len(labels)), key=lambda i: (labels[i].startswith("clients'"), labels[i].startswith("best")))
    axis.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        ncol=2,
        fontsize=8,
        frameon=False,
    )
