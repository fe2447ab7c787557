"""``stamen bench plot RECORD``: a benchmark record's picture, drawn from the record alone.

An ``algorithms`` record (accuracy per algorithm; node or graph classification): one panel per
(dataset, partitioner), a row per algorithm, its global model's and its clients' own models' test
accuracy at the round of best validation as points with ± std over seeds (circles: global model,
squares: clients' models; the algorithm's headline model filled, the other hollow), each value
printed. Points on an axis that spans the values (labelled as not starting at 0): the algorithms lie
a few points apart, which bars from 0 flatten. Records of the other benches have their tables only.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stamen.common.file_writes import atomic_write
from stamen.common.pictures import BLUE, VERMILLION, figure_bytes, new_figure
from stamen.contract.algorithms import Headline, headline_of
from stamen.contract.figures import GLOBAL_TEST_ACC, TEST_ACC

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PLOTTED = ("algorithms",)  # the benches whose records have a picture
MODELS = ((GLOBAL_TEST_ACC, "global model", "o", Headline.GLOBAL), (TEST_ACC, "clients' models", "s", Headline.CLIENTS))


def read_record(path: Path) -> dict[str, Any]:
    """The benchmark record at ``path``; ValueError in one line when it is none or has no picture."""
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path}: not a readable benchmark record ({type(error).__name__})") from None
    if not isinstance(record, dict) or "results" not in record:
        raise ValueError(f"{path}: not a benchmark record (no results)")
    if record.get("bench") not in PLOTTED:
        raise ValueError(f"{path}: a {record.get('bench')!r} record has no picture; pictures: {', '.join(PLOTTED)}")
    if (record.get("setting", {}).get("task") or "node-classification") == "link-prediction":
        raise ValueError(f"{path}: a link-prediction record has no picture (its table holds AUC, AP and Hits@K)")
    return record


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
    figure.suptitle(
        f"{record.get('name')}: test accuracy per algorithm, mean ± std over seeds {seeds}, "
        f"{setting.get('clients')} clients, {setting.get('rounds')} rounds",
        fontsize=11,
    )
    return figure


def plot_record(path: Path, out: Path | None = None) -> Path:
    """Draw the record at ``path`` to ``out`` (default: beside it, ``<name>.png``); the picture's path."""
    record = read_record(path)
    target = out or path.with_suffix(".png")
    if target.suffix.lower() != ".png":
        raise ValueError(f"--out {target}: give a .png file name")
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise ValueError(f"{target} is a link or not a regular file; give the path of a new or existing .png file")
    atomic_write(target, figure_bytes(algorithms_figure(record), "png"))
    return target
