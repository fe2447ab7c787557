"""The picture of a ``deploy`` record: Flower's deployment against its simulation, per SuperNode count.

Left: each run's wall time (the deployment's set-up of its SuperLink and SuperNodes as hollow points);
right: seconds per later round. Against the number of SuperNodes, both axes logarithmic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stamen.benches.plots.common import entitle, figure_text, plain_log_ticks
from stamen.common.pictures import BLUE, VERMILLION, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MODES = (("simulation", "simulation", BLUE, "o", "solid"), ("deployment", "deployment", VERMILLION, "s", "dashed"))
PANELS = (
    (("total_wall_seconds",), "wall s of the run (log scale)"),
    (("per_round", "seconds"), "s per later round (log scale)"),
)


def _figure(run: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    value: Any = run
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, int | float) else None


def deploy_figure(record: dict[str, Any]) -> Figure:
    """The picture of a ``deploy`` record (see the module docstring)."""
    entries = sorted(record["results"], key=lambda entry: entry["nodes"])
    if not entries:
        raise ValueError("no node count in its results")
    figure = new_figure(10.0, 4.0)
    axes = figure.subplots(1, len(PANELS), squeeze=False)[0]
    for axis, (keys, ylabel) in zip(axes, PANELS, strict=True):
        for mode, label, colour, marker, dash in MODES:
            points = [(e["nodes"], _figure(e.get(mode) or {}, keys)) for e in entries]
            drawn = [(x, y) for x, y in points if y is not None]
            axis.plot([x for x, _ in drawn], [y for _, y in drawn], marker=marker, color=colour, linestyle=dash,
                      label=label)  # fmt: skip
            for x, y in drawn:
                axis.annotate(figure_text(y), (x, y), textcoords="offset points", xytext=(5, 3), fontsize=7)
        if keys == ("total_wall_seconds",):
            set_up = [(e["nodes"], _figure(e.get("deployment") or {}, ("set_up_seconds",))) for e in entries]
            drawn = [(x, y) for x, y in set_up if y is not None]
            axis.plot([x for x, _ in drawn], [y for _, y in drawn], marker="s", color=VERMILLION,
                      markerfacecolor="white", linestyle="none", label="deployment's set-up")  # fmt: skip
        axis.set_xscale("log")
        axis.set_yscale("log")
        nodes = [e["nodes"] for e in entries]
        axis.set_xticks(nodes, [str(n) for n in nodes])
        axis.minorticks_off()
        plain_log_ticks(axis, "y")
        axis.set_xlabel("SuperNodes (clients), log scale", fontsize=8)
        axis.set_ylabel(ylabel, fontsize=8)
        axis.margins(x=0.15, y=0.2)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    modes = sorted({str((e.get("deployment") or {}).get("mode")) for e in entries})
    entitle(
        figure,
        record,
        f"Flower deployment ({', '.join(modes)}) against the simulation, {entries[0].get('rounds')} rounds, "
        "one run per node count",
    )
    return figure
