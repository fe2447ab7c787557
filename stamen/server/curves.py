"""``curves.svg``: a run's accuracy and loss per round, drawn as SVG text.

Two panels side by side. Left: the accuracies the rows hold (the global model's test and
validation accuracy, the local models' test and validation accuracy), each in its own
colour, with the best validation round (the round :func:`stamen.server.outputs.summarize`
selects) marked by a dashed line. Right: the training loss (weighted by training nodes).
The rounds run along both x axes, ticks on whole rounds. Each axis reaches a little past its
first and last tick, so a line's end and the best-round marker never lie on the frame, and the
tick labels carry as many decimals as it takes to tell them apart (a near-flat loss of 1.965
to 1.972 gets 1.965, 1.966, ..., never 1.97, 1.97).

Why not matplotlib: its import and one render cost about 0.5 s of interpreter time, a
sixth of a 100-round Cora run in process (and, on the in-process engine, the import
competes with the rounds for the interpreter). A chart of a few lines needs axes, ticks,
lines and text, which SVG states directly: the file is written in about a millisecond,
stays sharp at any size and opens in any browser. ``stamen compare RUN --plot FILE``
draws runs with matplotlib, to PNG, for a paper or slides.

A link-prediction run (no accuracy) draws its AUCs in the left panel instead (test,
validation and cut edges; the best round is then the one of best validation AUC).

A value that is missing or not finite leaves a gap in its line, never a point at zero.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape

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

ACCURACIES = (
    (GLOBAL_TEST_ACC, "global test accuracy", "#1f77b4"),
    (GLOBAL_VAL_ACC, "global validation accuracy", "#17becf"),
    (TEST_ACC, "client test accuracy (local models)", "#2ca02c"),
    (VAL_ACC, "client validation accuracy (local models)", "#bcbd22"),
)
AUCS = (
    (GLOBAL_TEST_AUC, "global test AUC", "#1f77b4"),
    (GLOBAL_VAL_AUC, "global validation AUC", "#17becf"),
    (link_figure("cut", "auc", True), "global cut-edge AUC", "#d62728"),
    (TEST_AUC, "client test AUC (local models)", "#2ca02c"),
    (VAL_AUC, "client validation AUC (local models)", "#bcbd22"),
)
LOSS = (TRAIN_LOSS, "train loss (weighted by training nodes)", "#9467bd")

WIDTH, HEIGHT = 1100, 490  # room below the panels for a legend of four lines
TOP, PLOT_HEIGHT = 60, 300  # the panels' plot areas: y from TOP to TOP + PLOT_HEIGHT
PANELS = ((75, 455), (625, 455))  # left x and width of each plot area
MARKED = 30  # lines of at most this many points get a dot per point
INSET = 0.03  # each axis runs this share of its span past the first and the last tick
FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


def curves_svg(rows: Sequence[Row], title: str) -> str:
    """The SVG document of ``rows`` (a run's ``metrics.jsonl``), titled ``title``."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" {FONT}>',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        _text(WIDTH / 2, 26, title, size=15, anchor="middle"),
    ]
    accuracies = [(label, colour, _points(rows, key)) for key, label, colour in ACCURACIES]
    accuracies = [line for line in accuracies if line[2]]
    figure = "accuracy"
    if not accuracies:  # a link-prediction run: its AUCs
        accuracies = [line for key, label, colour in AUCS if (line := (label, colour, _points(rows, key)))[2]]
        figure = "AUC" if accuracies else figure
    key, label, colour = LOSS
    loss = [(label, colour, points) for points in [_points(rows, key)] if points]
    best = _best_round(rows)
    parts += _panel(PANELS[0], f"{figure} per round", figure, accuracies, best)
    parts += _panel(PANELS[1], "training loss per round", "train loss", loss, None)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _points(rows: Sequence[Row], key: str) -> list[tuple[float, float | None]]:
    """``(round, value)`` of every row with ``round``; ``None`` where ``key`` is missing or not finite."""
    points: list[tuple[float, float | None]] = []
    for row in rows:
        if "round" not in row:
            continue
        value = row.get(key)
        finite = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        points.append((float(row["round"]), float(value) if finite else None))
    return points if any(value is not None for _, value in points) else []


def _best_round(rows: Sequence[Row]) -> float | None:
    """The round with the highest validation accuracy (link prediction: AUC; the global model's where there is one)."""
    selector = next((key for key in headline_keys("val") if any(key in r for r in rows)), VAL_ACC)
    scored = [r for r in rows if isinstance(r.get(selector), int | float) and "round" in r]
    return float(max(scored, key=lambda r: r[selector])["round"]) if scored else None


def _panel(
    area: tuple[int, int],
    title: str,
    y_label: str,
    lines: list[tuple[str, str, list[tuple[float, float | None]]]],
    best: float | None,
) -> list[str]:
    left, width = area
    bottom = TOP + PLOT_HEIGHT
    parts = [_text(left + width / 2, TOP - 10, title, size=13, anchor="middle")]
    if not lines:
        parts.append(f'<rect x="{left}" y="{TOP}" width="{width}" height="{PLOT_HEIGHT}" fill="none" stroke="#444"/>')
        parts.append(_text(left + width / 2, TOP + PLOT_HEIGHT / 2, "nothing recorded", size=12, anchor="middle"))
        return parts
    rounds = [r for _, _, points in lines for r, _ in points]
    values = [v for _, _, points in lines for _, v in points if v is not None]
    x_ticks = _ticks(min(rounds), max(rounds), whole=True)
    y_ticks = _ticks(min(values), max(values), whole=False)
    x_low, x_high = _inset(x_ticks)
    y_low, y_high = _inset(y_ticks)

    def x(value: float) -> float:
        return left + (value - x_low) / (x_high - x_low) * width

    def y(value: float) -> float:
        return bottom - (value - y_low) / (y_high - y_low) * PLOT_HEIGHT

    for tick, text in zip(x_ticks, tick_labels(x_ticks), strict=True):
        parts.append(_line(x(tick), TOP, x(tick), bottom, "#e3e3e3"))
        parts.append(_text(x(tick), bottom + 16, text, size=11, anchor="middle"))
    for tick, text in zip(y_ticks, tick_labels(y_ticks), strict=True):
        parts.append(_line(left, y(tick), left + width, y(tick), "#e3e3e3"))
        parts.append(_text(left - 6, y(tick) + 4, text, size=11, anchor="end"))
    parts.append(f'<rect x="{left}" y="{TOP}" width="{width}" height="{PLOT_HEIGHT}" fill="none" stroke="#444"/>')
    parts.append(_text(left + width / 2, bottom + 36, "round", size=12, anchor="middle"))
    parts.append(
        f'<text x="{left - 50}" y="{TOP + PLOT_HEIGHT / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 {left - 50} {TOP + PLOT_HEIGHT / 2})">{escape(y_label)}</text>'
    )
    if best is not None:
        parts.append(
            f'<line class="best-round" x1="{x(best):.1f}" y1="{TOP}" x2="{x(best):.1f}" y2="{bottom}" '
            'stroke="grey" stroke-dasharray="5,4"/>'
        )
        anchor = "start" if x(best) < left + width * 0.7 else "end"
        shift = 4 if anchor == "start" else -4
        parts.append(
            _text(x(best) + shift, bottom - 8, f"best validation: round {_label(best)}", 11, anchor, fill="grey")
        )
    for index, (label, colour, points) in enumerate(lines):
        for segment in _segments(points):
            coordinates = " ".join(f"{x(r):.1f},{y(v):.1f}" for r, v in segment)
            parts.append(f'<polyline points="{coordinates}" fill="none" stroke="{colour}" stroke-width="1.8"/>')
            if len(points) <= MARKED:
                parts += [f'<circle cx="{x(r):.1f}" cy="{y(v):.1f}" r="2.6" fill="{colour}"/>' for r, v in segment]
        legend_y = bottom + 58 + 17 * index
        parts.append(_line(left, legend_y - 4, left + 24, legend_y - 4, colour, width=2.5))
        parts.append(_text(left + 30, legend_y, label, size=12, anchor="start"))
    return parts


def _segments(points: list[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    """The runs of consecutive points that have a value: a missing one ends a segment."""
    segments: list[list[tuple[float, float]]] = [[]]
    for r, value in points:
        if value is None:
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append((r, value))
    return [segment for segment in segments if segment]


def _ticks(low: float, high: float, whole: bool) -> list[float]:
    """Evenly spaced round numbers (steps of 1, 2, 2.5 or 5 times a power of ten) covering ``low..high``."""
    if high - low < (1.0 if whole else 1e-9):
        low, high = (low - 1, high + 1) if whole else (low - 0.05, high + 0.05)
    raw = (high - low) / 6
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if whole:
        step = max(1.0, round(step))
    first = math.floor(low / step + 1e-9) * step
    count = math.ceil((high - first) / step - 1e-9)
    return [first + i * step for i in range(count + 1)]


def _inset(ticks: list[float]) -> tuple[float, float]:
    """The axis' ends: the first and last tick, moved out by :data:`INSET` of their span."""
    margin = (ticks[-1] - ticks[0]) * INSET
    return ticks[0] - margin, ticks[-1] + margin


def tick_labels(ticks: Sequence[float]) -> list[str]:
    """The ticks as text, with the fewest decimals (up to 9) that keep every label distinct and true
    to its tick (within a hundredth of a step)."""
    step = min((b - a for a, b in zip(ticks, ticks[1:], strict=False)), default=1.0)
    for decimals in range(10):
        texts = [f"{tick:.{decimals}f}".removeprefix("-") if round(tick, decimals) == 0 else f"{tick:.{decimals}f}"
                 for tick in ticks]  # fmt: skip
        true = all(abs(float(text) - tick) <= step / 100 for text, tick in zip(texts, ticks, strict=True))
        if true and len(set(texts)) == len(texts):
            return texts
    return [f"{tick:.9g}" for tick in ticks]


def _label(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def _line(x1: float, y1: float, x2: float, y2: float, colour: str, width: float = 1.0) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" stroke-width="{width}"/>'


def _text(x: float, y: float, text: str, size: int, anchor: str, fill: str = "#222") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}">{escape(text)}</text>'
    )
