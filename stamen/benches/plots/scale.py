"""The picture of a ``scale`` record: wall time against the graph's nodes and the clients.

Left: each finished run's whole command (partitioning included) against nodes x clients, a curve per
(engine, nodes) through its client counts, the partitioning alone as hollow points; right: its seconds
per later round. Both axes logarithmic. Runs that did not finish are counted in the title, not drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stamen.benches.plots.common import entitle, figure_text, plain_log_ticks
from stamen.common.pictures import DASHES, MARKERS, PALETTE, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PANELS = (
    ("command_seconds", "wall s of the command (log scale)"),
    ("seconds_per_round", "s per later round (log scale)"),
)


def scale_figure(record: dict[str, Any]) -> Figure:
    """The picture of a ``scale`` record (see the module docstring)."""
    finished = [r for r in record["results"] if r.get("status") == "finished" and "command_seconds" in r]
    if not finished:
        raise ValueError("no finished run in its results")
    engines = list(dict.fromkeys(r["engine"] for r in finished))
    sizes = sorted({r["nodes"] for r in finished})
    figure = new_figure(10.0, 4.2)
    axes = figure.subplots(1, len(PANELS), squeeze=False)[0]
    for axis, (key, ylabel) in zip(axes, PANELS, strict=True):
        for e, engine in enumerate(engines):
            for n, nodes in enumerate(sizes):
                runs = sorted(
                    (r for r in finished if (r["engine"], r["nodes"]) == (engine, nodes)), key=lambda r: r["clients"]
                )
                if not runs:
                    continue
                x = [r["nodes"] * r["clients"] for r in runs]
                y = [r[key] for r in runs]
                colour, marker = PALETTE[e % len(PALETTE)], MARKERS[n % len(MARKERS)]
                axis.plot(x, y, marker=marker, color=colour, linestyle=DASHES[e % len(DASHES)],
                          label=f"{engine}, {nodes:,} nodes")  # fmt: skip
                # one series' values right of its points, the next's left; one engine's above, the next's below
                side, lift = (6, "left") if n % 2 == 0 else (-6, "right"), 4 if e % 2 == 0 else -10
                for xi, yi in zip(x, y, strict=True):
                    axis.annotate(figure_text(yi), (xi, yi), textcoords="offset points", xytext=(side[0], lift),
                                  fontsize=6.5, ha=side[1])  # fmt: skip
                if key == "command_seconds":
                    parts = [
                        (xi, r["partition_seconds"]) for r, xi in zip(runs, x, strict=True) if "partition_seconds" in r
                    ]
                    axis.plot([p[0] for p in parts], [p[1] for p in parts], marker=marker, color=colour,
                              markerfacecolor="white", linestyle="none")  # fmt: skip
                    for xi, yi in parts if len(finished) <= 2 else []:  # printed where they crowd nothing
                        axis.annotate(figure_text(yi), (xi, yi), textcoords="offset points", xytext=(side[0], -10),
                                      fontsize=6.5, ha=side[1], color="#444444")  # fmt: skip
        axis.set_xscale("log")
        axis.set_yscale("log")
        plain_log_ticks(axis, "x", decades=True)
        plain_log_ticks(axis, "y")
        axis.set_xlabel("nodes x clients (log scale)", fontsize=8)
        axis.set_ylabel(ylabel, fontsize=8)
        axis.margins(x=0.3, y=0.25)
        axis.grid(which="both", alpha=0.3)
    axes[0].plot(
        [], [], "o", color="grey", markerfacecolor="white", linestyle="none", label="hollow: partitioning alone"
    )
    axes[0].legend(fontsize=7)
    setting = record.get("setting", {})
    unfinished = len(record["results"]) - len(finished)
    entitle(
        figure,
        record,
        f"wall time against nodes x clients, {setting.get('rounds')} rounds, {setting.get('partitioner')} partitions"
        + (f"; {unfinished} run(s) not finished, not drawn" if unfinished else ""),
    )
    return figure
