"""What every benchmark picture shares: its two-line title (what it measures; where and when) and its dot rows."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Dot:
    """One measured figure drawn as a point: its row label, value, and the range of its repeats (if any)."""

    label: str
    value: float
    low: float | None = None  # the fastest repeat, when the record keeps its repeats
    high: float | None = None  # the slowest repeat
    colour: str = "#000000"
    marker: str = "o"
    note: str = ""  # printed after the value, e.g. the ratio to a reference


def measured_where(record: dict[str, Any]) -> str:
    """The machine, code and date a record was measured with, from its provenance (or its machine and date)."""
    provenance = record.get("provenance") or {}
    machine = record.get("machine") or {}
    date = str(provenance.get("date") or record.get("date") or "an unrecorded date")[:10]
    code = provenance.get("commit") or record.get("code")
    parts = [f"measured {date}"]
    if machine.get("cpus"):
        parts.append(f"{machine['cpus']} CPUs")
    if machine.get("gpu"):
        parts.append(str(machine["gpu"]))
    platform = provenance.get("platform") or machine.get("platform")
    if platform:
        parts.append(str(platform))
    versions = provenance.get("packages") or {}
    torch_version = versions.get("torch") or machine.get("torch")
    flwr_version = versions.get("flwr") or machine.get("flwr")
    if torch_version:
        parts.append(f"torch {torch_version}")
    if flwr_version:
        parts.append(f"flwr {flwr_version}")
    if code:
        parts.append(f"code {code}")
    return ", ".join(parts)


def entitle(figure: Figure, record: dict[str, Any], what: str) -> None:
    """Title ``figure`` with what it measures (the record's name first), then where and when."""
    width = figure.get_figwidth()
    measures = textwrap.fill(f"{record.get('name')}: {what}", width=max(40, int(width * 14)))
    where = textwrap.fill(measured_where(record), width=max(40, int(width * 14)))
    figure.suptitle(f"{measures}\n{where}", fontsize=9)  # one text: nothing else of the figure overlaps it


def dot_rows(axis: Axes, dots: list[Dot], xlabel: str) -> None:
    """One row per dot, top to bottom, on a logarithmic x axis; each value printed with its note.

    A logarithmic axis shows each ratio as the same distance wherever it lies and starts at no 0;
    a dot's bar spans its fastest to its slowest repeat.
    """
    for row, dot in enumerate(dots):
        error = None
        if dot.low is not None and dot.high is not None:
            error = [[max(0.0, dot.value - dot.low)], [max(0.0, dot.high - dot.value)]]
        axis.errorbar(dot.value, row, xerr=error, fmt=dot.marker, color=dot.colour, capsize=3, markersize=6)
        right = dot.high if dot.high is not None else dot.value
        text = f"{figure_text(dot.value)} s" + (f"  {dot.note}" if dot.note else "")
        axis.annotate(text, (right, row), textcoords="offset points", xytext=(5, 0), va="center", fontsize=7)
    axis.set_xscale("log")
    plain_log_ticks(axis)
    axis.set_yticks(range(len(dots)), [dot.label for dot in dots], fontsize=8)
    axis.set_ylim(len(dots) - 0.5, -0.5)
    axis.set_xlabel(xlabel, fontsize=8)
    axis.margins(x=0.25)
    axis.grid(axis="x", which="both", alpha=0.3)


def figure_text(value: float) -> str:
    """A measured figure in plain digits, three significant ones below 100: ``0.386``, ``23.2``, ``1,367``."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def count(value: float) -> str:
    """A count in few characters: ``100k``, ``1M``, ``10bn``, ``20``."""
    for size, suffix in ((1e9, "bn"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def plain_log_ticks(axis: Axes, which: str = "x", decades: bool = False) -> None:
    """Label a logarithmic axis in plain numbers (``20``, ``1M``; not ``2 x 10^1``).

    At 1, 2 and 5 of each decade, or at each decade only (``decades``, for counts spanning many).
    """
    # on use: matplotlib stays out of this module's import
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    target = axis.xaxis if which == "x" else axis.yaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0,) if decades else (1.0, 2.0, 5.0)))
    label = count if decades else figure_text
    target.set_major_formatter(FuncFormatter(lambda value, _: label(value)))
    target.set_minor_formatter(NullFormatter())


def spread(values: list[float]) -> tuple[float | None, float | None]:
    """The fastest and slowest of a figure's repeats; ``(None, None)`` for fewer than two."""
    return (min(values), max(values)) if len(values) > 1 else (None, None)
