"""The picture of a ``sim`` record: the engines' wall time against the plain loop, and against the Flower floor.

Left (when the record has any engine run): for each job (algorithm, clients), the plain PyTorch loop's
wall time, the in-process engine's (also with the clients in turn, when measured) and the Flower
engine's, each with its ratio to the plain loop as the record states it. Right (when the record ran
the Flower floor): Stamen on Flower, the floor, and the library floor, each with Stamen's ratio to it.
A point is the record's figure (its median repeat), a bar spans the repeats where the record keeps them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stamen.benches.plots.common import Dot, dot_rows, entitle, spread
from stamen.common.pictures import BLACK, BLUE, GREEN, PURPLE, SKY, VERMILLION, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _job(entry: dict[str, Any], several: bool) -> str:
    return f"{entry['algorithm']}, {entry['clients']} clients" if several else f"{entry['clients']} clients"


def _ratio(entry: dict[str, Any], key: str, reference: str) -> str:
    return f"{entry[key]:.2f}x {reference}" if isinstance(entry.get(key), int | float) else ""


def speed_dots(entry: dict[str, Any], job: str) -> list[Dot]:
    """The job's wall times: plain loop, in-process engine (all clients at once, then in turn), Flower engine."""
    repeats = entry.get("repeats") or {}
    dots: list[Dot] = []
    if entry.get("in_process"):
        low, high = spread(repeats.get("in_process", []))
        dots.append(Dot(f"{job}: plain loop", entry["in_process"]["wall_seconds"], low, high, BLACK, "D"))
    if entry.get("inprocess_engine"):
        low, high = spread(repeats.get("inprocess_engine", []))
        value = entry["inprocess_engine"]["total_wall_seconds"]
        note = _ratio(entry, "engine_ratio", "plain")
        dots.append(Dot(f"{job}: in-process engine", value, low, high, BLUE, "o", note))
    if entry.get("inprocess_engine_in_turn"):
        low, high = spread(repeats.get("inprocess_engine_in_turn", []))
        value = entry["inprocess_engine_in_turn"]["total_wall_seconds"]
        note = _ratio(entry, "engine_in_turn_ratio", "plain")
        dots.append(Dot(f"{job}: in-process, clients in turn", value, low, high, SKY, "s", note))
    if entry.get("flwr_run"):
        low, high = spread([r["total_wall_seconds"] for r in entry.get("flower_repeats", [])])
        note = _ratio(entry, "wall_ratio", "plain")
        dots.append(
            Dot(f"{job}: Flower engine", entry["flwr_run"]["total_wall_seconds"], low, high, VERMILLION, "^", note)
        )
    return dots


def floor_dots(entry: dict[str, Any], job: str) -> list[Dot]:
    """Stamen on Flower beside the bare Flower floor and the floor whose clients import PyTorch and PyG."""
    repeats = entry.get("flower_repeats", [])
    low, high = spread([r["total_wall_seconds"] for r in repeats])
    dots = [Dot(f"{job}: Stamen on Flower", entry["flwr_run"]["total_wall_seconds"], low, high, VERMILLION, "^")]
    floor = entry["flower_floor"]
    low, high = spread([r["floor_wall_seconds"] for r in repeats if "floor_wall_seconds" in r])
    note = f"Stamen / floor {floor['ratio']:.2f}x"
    dots.append(Dot(f"{job}: Flower floor (NumPy only)", floor["wall_seconds"], low, high, GREEN, "o", note))
    library = entry.get("library_floor")
    if library:
        low, high = spread([r["library_floor_wall_seconds"] for r in repeats if "library_floor_wall_seconds" in r])
        note = f"Stamen / library floor {library['ratio']:.2f}x"
        label = f"{job}: library floor (imports torch, PyG)"
        dots.append(Dot(label, library["wall_seconds"], low, high, PURPLE, "s", note))
    return dots


def sim_figure(record: dict[str, Any]) -> Figure:
    """The picture of a ``sim`` record (see the module docstring)."""
    entries = record["results"]
    several = len({entry["algorithm"] for entry in entries}) > 1
    speed = [dot for entry in entries for dot in speed_dots(entry, _job(entry, several))]
    floor = [dot for entry in entries if entry.get("flower_floor") for dot in floor_dots(entry, _job(entry, several))]
    plain = any(entry.get("in_process") for entry in entries)
    speed_title = "against the plain PyTorch loop" if plain else "the engines (no plain loop in this record)"
    panels = [(dots, title) for dots, title in ((speed, speed_title), (floor, "against the Flower floor")) if dots]
    if not panels:
        raise ValueError("no engine run or floor in its results")
    rows = max(len(dots) for dots, _ in panels)
    figure = new_figure(6.0 * len(panels), 1.6 + 0.32 * rows)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for axis, (dots, title) in zip(axes, panels, strict=True):
        dot_rows(axis, dots, "wall s, engine start to end (log scale); bar: fastest to slowest repeat")
        axis.set_title(title, fontsize=9)
    setting = record.get("setting", {})
    entitle(
        figure,
        record,
        f"wall time of {setting.get('rounds')} rounds on {setting.get('dataset')}, "
        f"point: the record's figure (its median repeat)",
    )
    return figure
