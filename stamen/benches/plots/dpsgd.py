"""The picture of a ``dpsgd`` record: what DP-SGD costs over the same minibatches without it.

A row per (model, variant): one federated round's summed client time without DP, with Stamen's
DP-SGD and with Opacus's, each DP variant with its ratio to no DP as the record states it. The record
keeps the fastest of its repeats only, so no spread is drawn; the epsilons spent are in the title.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stamen.benches.plots.common import Dot, dot_rows, entitle
from stamen.common.pictures import BLACK, BLUE, VERMILLION, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

VARIANTS = (
    ("no_dp_seconds", "no DP", BLACK, "D", None),
    ("dp_sgd_seconds", "Stamen's DP-SGD", BLUE, "o", "ratio_dp_sgd"),
    ("opacus_seconds", "Opacus DP-SGD", VERMILLION, "s", "ratio_opacus"),
)


def dpsgd_figure(record: dict[str, Any]) -> Figure:
    """The picture of a ``dpsgd`` record (see the module docstring)."""
    dots = []
    for entry in record["results"]:
        for key, label, colour, marker, ratio in VARIANTS:
            if key in entry:
                note = f"{entry[ratio]:.2f}x no DP" if ratio and ratio in entry else ""
                dots.append(Dot(f"{entry['model']}: {label}", entry[key], colour=colour, marker=marker, note=note))
    if not dots:
        raise ValueError("no timed variant in its results")
    figure = new_figure(7.0, 1.6 + 0.32 * len(dots))
    (axis,) = figure.subplots(1, 1, squeeze=False)[0]
    dot_rows(axis, dots, "s of one round, summed over the clients (log scale)")
    setting = record.get("setting", {})
    epsilons = sorted(
        {round(e[k], 2) for e in record["results"] for k in ("epsilon_dp_sgd", "epsilon_opacus") if k in e}
    )
    entitle(
        figure,
        record,
        f"DP-SGD's cost on {setting.get('dataset')}, {setting.get('clients')} clients, "
        f"{setting.get('local_epochs')} local epochs, the fastest of {setting.get('repeats')} repeats; "
        f"epsilon spent: {', '.join(str(e) for e in epsilons) or 'not recorded'}",
    )
    return figure
