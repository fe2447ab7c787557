"""The tables of ``stamen bench sim`` (:mod:`stamen.benches.sim`): one row per job, and where a steady
round's seconds went."""

from __future__ import annotations

from typing import Any

from stamen.benches.records import markdown_table, print_tables


def sim_rows(record: dict[str, Any]) -> list[list[str]]:
    """One row per job: each engine's run time and whole command time, ratios of run times to the plain loop."""
    rows = []
    for entry in record["results"]:
        run, base, engine = entry["flwr_run"], entry.get("in_process"), entry.get("inprocess_engine")
        per_round = run["per_round"]
        rows.append(
            [
                entry["algorithm"],
                str(entry["clients"]),
                f"{base['wall_seconds']:.1f}" if base else "-",
                f"{engine['total_wall_seconds']:.1f}" if engine else "-",
                f"{run['total_wall_seconds']:.1f}",
                _floor(entry),
                f"{engine['command_wall_seconds']:.1f}" if engine else "-",
                f"{run['command_wall_seconds']:.1f}" if "command_wall_seconds" in run else "-",
                f"{entry['engine_ratio']:.2f}x" if "engine_ratio" in entry else "-",
                f"{entry['engine_round_ratio']:.2f}x" if "engine_round_ratio" in entry else "-",
                _each_repeat(entry),
                (
                    f"{entry['inprocess_engine_in_turn']['total_wall_seconds']:.1f} "
                    f"({entry['engine_in_turn_ratio']:.2f}x)"
                    if "engine_in_turn_ratio" in entry
                    else "-"
                ),
                (
                    f"{entry['inprocess_engine_local_eval']['total_wall_seconds']:.1f} "
                    f"({entry['engine_local_eval_ratio']:.2f}x)"
                    if "engine_local_eval_ratio" in entry
                    else "-"
                ),
                f"{entry['wall_ratio']:.2f}x" if base else "-",
                f"{run['command_to_round_1_seconds']:.1f}" if "command_to_round_1_seconds" in run else "-",
                f"{per_round['seconds']:.3f}",
                f"{run['peak_memory_gb']:.2f}",
                f"{base['test_acc_at_best_val']:.3f}" if base else "-",
                f"{engine['test_acc_at_best_val']:.3f}" if engine else "-",
                f"{run['test_acc_at_best_val']:.3f}",
            ]
        )
    return rows


def _floor(entry: dict[str, Any]) -> str:
    """The Flower floor's wall time and the Flower engine's over it (``-``: not run, or recorded before it)."""
    floor = entry.get("flower_floor")
    return f"{floor['wall_seconds']:.1f} ({floor['ratio']:.2f}x)" if floor else "-"


def _each_repeat(entry: dict[str, Any]) -> str:
    """Each repeat's in-process engine time over the plain loop's of the same repeat (``--repeats``)."""
    repeats = entry.get("repeats", {})
    pairs = list(zip(repeats.get("inprocess_engine", []), repeats.get("in_process", [])))
    return " ".join(f"{engine / plain:.2f}x" for engine, plain in pairs) if len(pairs) > 1 else "-"


SIM_COLUMNS = [
    "algorithm",
    "clients",
    "plain loop wall s",
    "in-process engine wall s",
    "flower engine wall s",
    "Flower floor s (flower engine / floor)",
    "in-process command s",
    "flower command s",
    "in-process / plain",
    "in-process / plain, mean round",
    "in-process / plain, each repeat",
    "in-process, clients in turn s (/ plain)",
    "in-process with client figures s (/ plain)",
    "flower / plain",
    "flower: command to round 1 done, s",
    "flower: s / later round",
    "flower peak GB",
    "plain test acc (best val)",
    "in-process test acc (best val)",
    "flower test acc (best val)",
]


BREAKDOWN_COLUMNS = [
    "algorithm",
    "clients",
    "actors",
    "s / round",
    "exchange",
    "aggregate",
    "client handlers (sum)",
    "setup (sum)",
    "train (sum)",
    "eval (sum)",
    "pack (sum)",
    "slowest handler",
    "engine",
    "CLI checks s",
    "outside ServerApp s",
    "round 1 s",
]


def breakdown_rows(record: dict[str, Any]) -> list[list[str]]:
    """Where a steady round's seconds went (see :func:`per_round_breakdown`)."""
    rows = []
    for entry in record["results"]:
        run = entry["flwr_run"]
        if "engine_seconds" not in run["per_round"]:
            continue  # recorded before the breakdown existed
        per_round = run["per_round"]
        rows.append(
            [entry["algorithm"], str(entry["clients"]), str(run["actors"])]
            + [
                f"{per_round[key]:.3f}"
                for key in (
                    "seconds",
                    "exchange_seconds",
                    "aggregate_seconds",
                    "client_handler_seconds_sum",
                    "client_setup_seconds_sum",
                    "client_train_seconds_sum",
                    "client_eval_seconds_sum",
                    "client_pack_seconds_sum",
                    "client_handler_seconds_max",
                    "engine_seconds",
                )
            ]
            + [
                f"{run['check_seconds']:.1f}",
                f"{run['outside_server_app_seconds']:.1f}",
                f"{per_round['first_round_seconds']:.1f}",
            ]
        )
    return rows


FLOOR_COLUMNS = [
    "algorithm",
    "clients",
    "flower engine s",
    "floor s",
    "flower / floor",
    "outside the rounds s: flower (floor)",
    "round 1 s: flower (floor)",
    "later rounds s: flower (floor)",
    "flower / floor, each repeat",
]


def _each_flower_repeat(entry: dict[str, Any], key: str) -> str:
    """Each Flower repeat's ratio ``key`` (``--flower-repeats``; ``-`` for one run, or a record from before)."""
    ratios = [repeat[key] for repeat in entry.get("flower_repeats", []) if key in repeat]
    return " ".join(f"{ratio:.2f}x" for ratio in ratios) if len(ratios) > 1 else "-"


def floor_rows(record: dict[str, Any]) -> list[list[str]]:
    """Stamen's Flower run against the Flower floor, by part: outside the rounds (start-up and end: the
    SuperLink, the simulation, the ServerApp's start and end), round 1 (the actors' start, the ClientApp's
    imports and data), and the later rounds together."""
    rows = []
    for entry in record["results"]:
        floor, run = entry.get("flower_floor"), entry["flwr_run"]
        if not floor or "rounds_seconds" not in floor:
            continue  # not run, or recorded before the split
        first = run["per_round"]["first_round_seconds"]
        later = run["total_wall_seconds"] - run["start_up_seconds"] - first
        floor_later = floor["rounds_seconds"] - floor["first_round_seconds"]
        rows.append(
            [
                entry["algorithm"],
                str(entry["clients"]),
                f"{run['total_wall_seconds']:.1f}",
                f"{floor['wall_seconds']:.1f}",
                f"{floor['ratio']:.2f}x",
                f"{run['start_up_seconds']:.1f} ({floor['start_up_seconds']:.1f})",
                f"{first:.1f} ({floor['first_round_seconds']:.1f})",
                f"{later:.1f} ({floor_later:.1f})",
                _each_flower_repeat(entry, "floor_ratio"),
            ]
        )
    return rows


LIBRARY_FLOOR_COLUMNS = [
    "algorithm",
    "clients",
    "flower engine s",
    "floor s",
    "library floor s (over the floor)",
    "flower / library floor",
    "round 1 s: flower (floor, library floor)",
    "a client's import s",
    "flower / library floor, each repeat",
]


def library_floor_rows(record: dict[str, Any]) -> list[list[str]]:
    """Stamen's Flower run against the floor whose clients import PyTorch and PyG first (``--library-floor``):
    what the libraries' import adds to the floor, and what Stamen's own code adds to both."""
    rows = []
    for entry in record["results"]:
        floor, library, run = entry.get("flower_floor"), entry.get("library_floor"), entry["flwr_run"]
        if not floor or not library:
            continue
        rows.append(
            [
                entry["algorithm"],
                str(entry["clients"]),
                f"{run['total_wall_seconds']:.1f}",
                f"{floor['wall_seconds']:.1f}",
                f"{library['wall_seconds']:.1f} ({library['over_floor']:.2f}x)",
                f"{library['ratio']:.2f}x",
                f"{run['per_round']['first_round_seconds']:.1f} ({floor['first_round_seconds']:.1f}, "
                f"{library['first_round_seconds']:.1f})",
                f"{library['import_seconds']:.1f}",
                _each_flower_repeat(entry, "library_floor_ratio"),
            ]
        )
    return rows


def markdown(record: dict[str, Any]) -> list[str]:
    lines = markdown_table(SIM_COLUMNS, sim_rows(record))
    breakdown = breakdown_rows(record)
    if breakdown:
        lines += ["", "Seconds per steady round, by part:", ""] + markdown_table(BREAKDOWN_COLUMNS, breakdown)
    floors = floor_rows(record)
    if floors:
        lines += ["", "Against the Flower floor, by part:", ""] + markdown_table(FLOOR_COLUMNS, floors)
    libraries = library_floor_rows(record)
    if libraries:
        lines += ["", "Against the floor whose clients import PyTorch and PyG:", ""]
        lines += markdown_table(LIBRARY_FLOOR_COLUMNS, libraries)
    return lines


def print_table(record: dict[str, Any]) -> None:
    tables = [
        (f"stamen bench {record['name']}", SIM_COLUMNS, sim_rows(record)),
        ("seconds per steady round, by part", BREAKDOWN_COLUMNS, breakdown_rows(record)),
        ("against the Flower floor, by part", FLOOR_COLUMNS, floor_rows(record)),
    ]
    libraries = library_floor_rows(record)
    if libraries:  # --library-floor
        tables.append(("against the floor whose clients import PyTorch and PyG", LIBRARY_FLOOR_COLUMNS, libraries))
    print_tables(tables)
