"""Sweeps: run-config values x seeds, one run directory per run, mean +- std per config.

A sweep is a grid over run-config keys (``--set lr=0.01,0.005 --set model='gcn','sage'``, or
the ``[grid]`` table of a TOML file, ``--grid grid.toml``) times ``--seeds``. Each run is an
ordinary ``stamen run`` with its own run directory ``<sweep>/<key=value,...,seed=k>/``; a run
whose directory says ``finished`` is skipped, so running the same sweep again resumes it.
Results are grouped by config (the seeds of one config together): the mean and standard
deviation of each figure over the seeds. The keys that name and place a run
(:data:`OWN_KEYS`) are the sweep's own: neither ``--set`` nor ``-c`` may give them (two
seeds would share one folder, or a run land outside the sweep's).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from stamen.contract.algorithms import Headline, headline_of
from stamen.contract.figures import (
    FINAL_CLIENTS_TEST,
    FINAL_GLOBAL_TEST,
    FINAL_TEST_ACC,
    TEST_ACC_AT_BEST_VAL,
    headline,
    model_figure,
)
from stamen.contract.key_spelling import kebab_keys
from stamen.simulations.experiment_file import is_scalar, read_toml
from stamen.simulations.overrides import parse_overrides

# Figures a sweep reports per run (from its summary.json), and their labels.
FIGURES = (
    (FINAL_TEST_ACC, "final test acc"),
    (FINAL_GLOBAL_TEST, "global model"),
    (FINAL_CLIENTS_TEST, "clients' models"),
    (TEST_ACC_AT_BEST_VAL, "test acc at best val"),
    ("total_wall_seconds", "wall s"),
)
# A table's mark on the algorithm's headline model's column (global model or clients' models), and its caption.
HEADLINE_MARK = " *"
HEADLINE_COLUMN = {Headline.GLOBAL: FINAL_GLOBAL_TEST, Headline.CLIENTS: FINAL_CLIENTS_TEST}
HEADLINE_NOTE = (
    "*: the algorithm's headline model, as its spec names it (the global model for FedAvg-like methods, the "
    "clients' own models for personalised ones); final test acc and test acc at best val are that model's"
)
# Run-config keys the sweep sets for every run itself: where it goes, under which name, fresh.
OWN_KEYS = ("run-name", "output-dir", "overwrite", "resume-from")
_VALUE = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|[^,]+""")


def check_own_keys(keys: Iterable[str], where: str) -> None:
    """ValueError in one line if ``keys`` (of ``--set`` or ``-c``) holds one of :data:`OWN_KEYS`."""
    for key in keys:
        if key in OWN_KEYS:
            raise ValueError(
                f"{where} {key}=...: a sweep names its runs itself (<out>/<name>/<values,seed=k>/, resumed by "
                "running the same command again); choose the sweep's folder with --out and --name"
            )


def parse_set(text: str) -> tuple[str, list[Any]]:
    """``key=v1,v2,...`` (TOML values; quoted strings may hold commas) as ``(key, [v1, v2, ...])``."""
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or not key or not values.strip() or any(char.isspace() for char in key):
        raise ValueError(f"--set {text!r}: write key=value1,value2, e.g. --set lr=0.01,0.005")
    parsed = [parse_overrides([f"{key}={raw.strip()}"], f"--set {key}")[key] for raw in _VALUE.findall(values)]
    check_set(key, parsed, "--set", f"--set {text!r}")
    return key, parsed


def check_set(key: str, values: list[Any], where: str, what: str) -> None:
    """A swept key and its values, from ``where`` (``--set``, a grid file): ValueError in one line if the key is
    ``seed`` or one of :data:`OWN_KEYS`, or ``what`` (the values as given) repeats a value."""
    if key == "seed":
        raise ValueError(f"{where} seed=...: give seeds with --seeds 0,1,2")
    check_own_keys([key], where)
    if len(set(map(repr, values))) != len(values):
        raise ValueError(f"{what} repeats a value")


def grid_file(path: str) -> list[tuple[str, list[Any]]]:
    """The ``[grid]`` table of the experiment file ``path`` (``lr = [0.01, 0.005]``: a key and the values it takes),
    as :func:`parse_set` gives ``--set``; ValueError in one line naming the file and the problem.

    The file's top-level keys beside the table are the experiment's fixed run-config values
    (:func:`fixed_file_keys`); a key both fixed there and in the grid is refused."""

    document = read_toml(path)
    table = document.get("grid")
    if not isinstance(table, dict) or not table:
        raise ValueError(f"{path}: no [grid] table; write e.g. [grid] then lr = [0.01, 0.005]")
    tables = [key for key, value in document.items() if key != "grid" and isinstance(value, dict)]
    if tables:
        raise ValueError(
            f"{path}: [{tables[0]}] is a table; an experiment file holds fixed run-config keys at its top level "
            "and the swept ones in [grid]"
        )
    sets = []
    for key, values in table.items():
        if not isinstance(values, list) or not values or not all(is_scalar(value) for value in values):
            raise ValueError(f"{path}: [grid] {key} must be a list of values, e.g. {key} = [1, 2]; got {values!r}")
        check_set(key, values, f"{path}: [grid]", f"{path}: [grid] {key}")
        sets.append((key, values))
    check_fixed_and_swept(fixed_file_keys(path), [key for key, _ in sets], path)
    return sets


def fixed_file_keys(path: str) -> dict[str, Any]:
    """The fixed run-config values of the experiment file ``path``: its top-level keys beside ``[grid]``
    (kebab-case; checked as :func:`stamen.simulations.experiment_file.run_config_file` checks a file's keys)."""
    fixed = {key: value for key, value in read_toml(path).items() if key != "grid"}
    for key, value in fixed.items():
        if key == "seed":
            raise ValueError(f"{path}: seed = ...: give seeds with --seeds 0,1,2 (seeds=[...] for stamen.sweep)")
        check_own_keys([key], f"{path}:")
        if not is_scalar(value):
            raise ValueError(f"{path}: {key} = {value!r} is not a number, true/false or a quoted string")
    return kebab_keys(fixed, path)


def check_fixed_and_swept(fixed: Iterable[str], swept: Iterable[str], where: str) -> None:
    """ValueError in one line if a run-config key is both fixed (``where``) and swept: one value would hide
    the other."""
    both = [key.replace("_", "-") for key in fixed if key.replace("_", "-") in {k.replace("_", "-") for k in swept}]
    if both:
        raise ValueError(
            f"{where}: {both[0]} is both fixed and in the grid; give it in one place (the grid to sweep it, "
            "a fixed value to hold it)"
        )


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` as ``[0, 1, 2]`` (seeds are integers >= 0)."""
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, e.g. --seeds 0,1,2; got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise ValueError(f"--seeds must be integers >= 0, e.g. --seeds 0,1,2; got {text!r}")
    return seeds


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: the swept values, the seed, and its run-directory name."""

    values: tuple[tuple[str, Any], ...]
    seed: int

    @property
    def group(self) -> str:
        """The config's name without the seed (``lr=0.01,model=gcn``; ``base`` when nothing is swept)."""
        return ",".join(f"{k}={_plain(v)}" for k, v in self.values) or "base"

    @property
    def name(self) -> str:
        """A run-name (one plain folder name): the group and seed, hashed when too long or unusual."""
        name = re.sub(r"[^A-Za-z0-9._+=@,-]", "_", f"{self.group},seed={self.seed}")
        if len(name) > 120 or not name[0].isalnum():
            name = f"run-{hashlib.sha256(name.encode()).hexdigest()[:12]},seed={self.seed}"
        return name

    def overrides(self) -> str:
        """The run's own ``-c`` overrides (its swept values and seed), as TOML."""
        return " ".join(f"{k}={toml_value(v)}" for k, v in (*self.values, ("seed", self.seed)))


def grid(sets: list[tuple[str, list[Any]]], seeds: list[int]) -> list[SweepRun]:
    """Every combination of the swept values, each with every seed (configs in the order given)."""
    keys = [key for key, _ in sets]
    if len(set(keys)) != len(keys):
        raise ValueError(f"--set names a key twice: {', '.join(keys)}")
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds must be distinct integers, got {seeds}")
    combos = itertools.product(*(values for _, values in sets))
    return [SweepRun(tuple(zip(keys, combo)), seed) for combo in combos for seed in seeds]


@dataclass
class Group:
    """The runs of one config: their figures, and mean and standard deviation over the seeds."""

    name: str
    values: dict[str, Any]
    runs: list[dict[str, Any]] = field(default_factory=list)

    def stats(self) -> dict[str, dict[str, float | None]]:
        out: dict[str, dict[str, float | None]] = {}
        for key, _ in FIGURES:
            numbers = [r[key] for r in self.runs if isinstance(r.get(key), int | float) and not math.isnan(r[key])]
            out[key] = {
                "mean": statistics.fmean(numbers) if numbers else None,
                "std": statistics.stdev(numbers) if len(numbers) > 1 else (0.0 if numbers else None),
                "n": len(numbers),
            }
        return out

    def headline(self) -> Headline:
        """Which model's figures are the headline of this config's algorithm (its spec's, :func:`headline_of`)."""
        return headline_of(next((run["algorithm"] for run in self.runs if run.get("algorithm")), None))


def spec_headline(part: dict[str, Any], algorithm: str | None, kind: str = "test") -> Any:
    """Algorithm ``algorithm``'s headline ``kind`` figure in ``part`` (a summary's final or best part): the model
    its spec names (:attr:`stamen.contract.algorithms.AlgorithmSpec.headline`), the other where that one is absent."""
    value = model_figure(part, headline_of(algorithm) is Headline.GLOBAL, kind)
    return headline(part, kind) if value is None else value


def run_figures(summary: dict[str, Any]) -> dict[str, Any]:
    """A run's sweep figures from its summary: the headline (the model the algorithm's spec names,
    :func:`spec_headline`), the global and the clients' models' final figures side by side, the headline at the
    best validation round."""
    final, algorithm = summary.get("final", {}), summary.get("algorithm")
    return {
        "algorithm": algorithm,
        FINAL_TEST_ACC: spec_headline(final, algorithm),
        FINAL_GLOBAL_TEST: model_figure(final, global_model=True),
        FINAL_CLIENTS_TEST: model_figure(final, global_model=False),
        TEST_ACC_AT_BEST_VAL: spec_headline(summary.get("best", {}), algorithm),
        "notes": summary.get("notes", []),
        "total_wall_seconds": summary.get("total_wall_seconds"),
    }


def groups(runs: list[SweepRun], figures: dict[str, dict[str, Any]]) -> list[Group]:
    """Runs grouped by config, in sweep order; ``figures`` maps a run name to its figures (finished runs)."""
    found: dict[str, Group] = {}
    for run in runs:
        group = found.setdefault(run.group, Group(run.group, dict(run.values)))
        if run.name in figures:
            group.runs.append({"seed": run.seed, "run": run.name, **figures[run.name]})
    return list(found.values())


def _plain(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def toml_value(value: Any) -> str:
    """A run-config value as a TOML value of a ``-c`` item."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)
