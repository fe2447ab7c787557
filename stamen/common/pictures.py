"""Stamen's pictures: a matplotlib :class:`~matplotlib.figure.Figure` of its own, rendered to PNG or SVG bytes.

Every figure Stamen draws is made here, on the Agg canvas, as a figure object: nothing calls
``matplotlib.use`` or ``pyplot``, so a user's own matplotlib backend, open figures and style stay as
they were. The callers write the bytes atomically (a reader never sees a half-drawn picture).

The colours are Okabe and Ito's colour-blind-safe palette; each caller adds line styles or markers so
that its series also read apart in grey. SVG keeps its text as text (searchable, and a test can find
the series' labels in it) and carries no date, so the same rows give the same file.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe & Ito (2008): told apart by the common colour-vision deficiencies
BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, YELLOW, BLACK = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
)
PALETTE = (BLUE, VERMILLION, GREEN, ORANGE, PURPLE, SKY, BLACK, YELLOW)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("solid", "dashed", "dotted", "dashdot")
DPI = 120


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of ``width`` x ``height`` inches on its own Agg canvas, laid out so that nothing clips."""
    # on use: matplotlib stays out of this module's import
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def figure_bytes(figure: Figure, kind: Literal["png", "svg"]) -> bytes:
    """``figure`` as a PNG or an SVG file's bytes (its bounding box fitted to what it draws)."""
    # on use: matplotlib stays out of this module's import
    import matplotlib

    buffer = io.BytesIO()
    if kind == "svg":  # text as text, no date: set only while this figure is saved
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "stamen"}):
            figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    else:
        figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()
