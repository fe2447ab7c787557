"""The picture of an ``algorithms`` record: accuracy per algorithm (node or graph classification).

One panel per (dataset, partitioner), a row per algorithm, its global model's and its clients' own
models' test accuracy at the round of best validation as points with ± std over seeds (circles: global
model, squares: clients' models; the algorithm's headline model filled, the other hollow), each value
printed. Points on an axis that spans the values (labelled as not starting at 0): the algorithms lie a
few points apart, which bars from 0 flatten.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from stamen.benches.plots.common import entitle
from stamen.common.pictures import BLUE, VERMILLION, new_figure
from stamen.contract.algorithms import Headline, headline_of
from stamen.contract.figures import GLOBAL_TEST_ACC, TEST_ACC

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MODELS = ((GLOBAL_TEST_ACC, "global model", "o", Headline.GLOBAL), (TEST_ACC, "clients' models", "s", Headline.CLIENTS))


def algorithms_figure(record: dict[str, Any]) -> Figure:
    """The picture of an ``algorithms`` record (see the module docstring)."""
    ran = [r for r in record["results"] if r.get("status") == "ran"]
    settings = list(dict.fromkeys((r["dataset"], r["partitioner"]) for r in ran))
    algorithms = list(dict.fromkeys(r["algorithm"] for r in ran))
    figure = new_figure(6.5 * max(1, len(settings)), 1.2 + 0.34 * len(algorithms))
    axes = figure.subplots(1, max(1, len(settings)), sharey=True, squeeze=False)[0]
    colours = {GLOBAL_TEST_ACC: BLUE, TEST_ACC: VERMILLION}
    for axis, (dataset, partitioner) in zip(axes, settings, strict=False):
        for row, algorithm in enumerate(algorithms):
            runs = [
                r for r in ran if (r["dataset"], r["partitioner"], r["algorithm"]) == (dataset, partitioner, algorithm)
            ]
            for offset, (key, _, marker, model) in enumerate(MODELS):
                values = [100 * r["best"][key] for r in runs if r["best"].get(key) is not None]
                if not values:
                    continue
                mean = statistics.fmean(values)
                spread = statistics.pstdev(values) if len(values) > 1 else 0.0
                y = row + (offset - 0.5) * 0.3
                filled = headline_of(algorithm) is model
                axis.errorbar(mean, y, xerr=spread, fmt=marker, color=colours[key], capsize=3, markersize=6,
                              markerfacecolor=colours[key] if filled else "white")  # fmt: skip
                axis.annotate(f"{mean:.1f}", (mean + spread, y), textcoords="offset points", xytext=(4, 0),
                              va="center", fontsize=7)  # fmt: skip
        axis.set_title(f"{dataset}, {partitioner}", fontsize=10)
        axis.set_xlabel("test accuracy (%) at the best validation round; axis not from 0")
        axis.margins(x=0.12)
        axis.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(algorithms)), algorithms, fontsize=8)
    axes[0].invert_yaxis()
    for key, label, marker, _ in MODELS:
        axes[-1].plot([], [], marker, color=colours[key], label=label, linestyle="none")
    axes[-1].plot([], [], "o", color="grey", label="filled: the algorithm's headline model", linestyle="none")
    axes[-1].plot([], [], "o", color="grey", markerfacecolor="white", label="hollow: the other", linestyle="none")
    figure.legend(*axes[-1].get_legend_handles_labels(), loc="outside lower center", ncol=4, fontsize=7, frameon=False)
    seeds = sorted({r["seed"] for r in ran})
    setting = record.get("setting", {})
    entitle(
        figure,
        record,
        f"test accuracy per algorithm, mean ± std over seeds {seeds}, "
        f"{setting.get('clients')} clients, {setting.get('rounds')} rounds",
    )
    return figure
