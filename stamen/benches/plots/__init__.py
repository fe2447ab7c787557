"""``stamen bench plot RECORD``: a benchmark record's picture, drawn from the record alone.

The picture follows the record's bench (its ``bench`` field), one drawing per bench:

- ``algorithms``: test accuracy per algorithm at the best validation round, ± std over seeds;
- ``sim``: the engines' wall time against the plain PyTorch loop and against the Flower floor;
- ``scale``: wall time and seconds per round against nodes x clients;
- ``dpsgd``: DP-SGD's time against the same minibatches without DP;
- ``deploy``: Flower's deployment against its simulation, per SuperNode count.

Each picture says what it measures and the machine, code and date of the record; nothing is measured
again. Wall times lie on logarithmic axes (a ratio is the same distance anywhere); accuracies on an
axis that spans them, labelled as not starting at 0. A record of another bench, or a link-prediction
record (its table holds AUC, AP and Hits@K), has no picture.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stamen.benches.plots.algorithms import algorithms_figure
from stamen.benches.plots.deploy import deploy_figure
from stamen.benches.plots.dpsgd import dpsgd_figure
from stamen.benches.plots.scale import scale_figure
from stamen.benches.plots.sim import sim_figure
from stamen.common.file_writes import atomic_write
from stamen.common.pictures import figure_bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: each bench whose records have a picture, and the function that draws it
FIGURES: dict[str, Callable[[dict[str, Any]], Figure]] = {
    "algorithms": algorithms_figure,
    "sim": sim_figure,
    "scale": scale_figure,
    "dpsgd": dpsgd_figure,
    "deploy": deploy_figure,
}


def read_record(path: Path) -> dict[str, Any]:
    """The benchmark record at ``path``; ValueError in one line when it is none or has no picture."""
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path}: not a readable benchmark record ({type(error).__name__})") from None
    if not isinstance(record, dict) or not isinstance(record.get("results"), list):
        raise ValueError(f"{path}: not a benchmark record (no results)")
    if record.get("bench") not in FIGURES:
        raise ValueError(f"{path}: a {record.get('bench')!r} record has no picture; pictures: {', '.join(FIGURES)}")
    if (record.get("setting", {}).get("task") or "node-classification") == "link-prediction":
        raise ValueError(f"{path}: a link-prediction record has no picture (its table holds AUC, AP and Hits@K)")
    return record


def record_figure(path: Path, record: dict[str, Any]) -> Figure:
    """The picture of ``record`` (read from ``path``); ValueError in one line when it lacks what it needs."""
    bench = record["bench"]
    try:
        return FIGURES[bench](record)
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: a {bench!r} record without the figures its picture needs ({error!r})") from None
    except ValueError as error:
        raise ValueError(f"{path}: a {bench!r} record with {error}; nothing to draw") from None


def plot_record(path: Path, out: Path | None = None) -> Path:
    """Draw the record at ``path`` to ``out`` (default: beside it, ``<name>.png``); the picture's path."""
    target = out or path.with_suffix(".png")
    if target.suffix.lower() != ".png":
        raise ValueError(f"--out {target}: give a .png file name")
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise ValueError(f"{target} is a link or not a regular file; give the path of a new or existing .png file")
    record = read_record(path)
    atomic_write(target, figure_bytes(record_figure(path, record), "png"))
    return target
