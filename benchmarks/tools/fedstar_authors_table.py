"""The table of ``fedstar_authors.py`` (FedStar, FedAvg and self-training by FedStar's authors' code on Stamen's
cross-dataset federation): a record of that tool beside Stamen's bench record of the same setting, as markdown.
No torch and none of the authors' code: it reads the two records only, and writes the table as every Stamen
record is written (atomically)."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean, pstdev
from typing import Any

from stamen.common.file_writes import atomic_write

DATASET = "graphs-synth+tu:MUTAG+tu:PROTEINS"
METHODS = ("fedstar", "fedavg", "local")  # the authors' methods, each named as Stamen's algorithm of the same name


def cell(values: list[float], seeds: int) -> str:
    """Mean ± population std in %, with ``(k of n seeds)`` where some seeds lack the figure."""
    if not values:
        return "-"
    shown = f"{100 * mean(values):.1f} ± {100 * pstdev(values):.1f}"
    return shown if len(values) == seeds else f"{shown} ({len(values)} of {seeds} seeds)"


FIGURES = (
    ("best", "client", "client models at best val"),
    ("final", "client", "client models final"),
    ("best", "received", "received model at best val"),
    ("final", "received", "received model final"),
)
STAMEN_KEYS = {"client": "test_acc", "received": "global_test_acc"}


def stamen_record(path: Path) -> dict[str, Any]:
    """Stamen's bench record of the setting (``stamen bench algorithms``' JSON)."""
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def table(record: Path, stamen_path: Path | None, markdown: Path) -> None:
    """``markdown``: the side-by-side table of a record of ``fedstar_authors.py`` (and of Stamen's bench record of
    the setting, if given)."""
    authors = json.loads(record.read_text())
    stamen = stamen_record(stamen_path) if stamen_path else None
    seeds = sorted({r["seed"] for r in authors["runs"]})
    columns = ["method", "figure", "authors' code", *(["Stamen"] if stamen else [])]
    commands = authors.get("commands") or [authors["command"]]
    lines = [f"## {markdown.stem}", "", *(f"`{command}`" for command in commands)]
    lines += [f"(code {authors['provenance'].get('commit', '?')}; the authors' code at commit da01eac)", ""]
    if stamen:
        lines += [f"Stamen: `{stamen['command']}` (code {stamen.get('code', '?')}, {stamen.get('date', '?')})", ""]
    lines += [
        f"Test accuracy (%) pooled over the clients' test graphs, mean ± std over seeds {seeds} (`k of n` where a "
        "method ran fewer), 3 clients (graphs-synth, MUTAG, PROTEINS: one dataset each, Stamen's graphs and "
        f"splits), {authors['setting']['rounds']} rounds. Client models: each client's model right after its local "
        "training; received "
        "model: after it downloaded the round's average (Stamen's global-model figure; the authors' own "
        "reported figure at the final round). Best val: the first round of the highest pooled validation "
        "accuracy of the received model where the method has one, else of the client models.",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for method in METHODS:
        runs = [r for r in authors["runs"] if r["method"] == method]
        ran = [r for r in (stamen or {}).get("results", []) if r.get("algorithm") == method]
        for when, model, label in FIGURES:
            if not runs or f"{model}_test_acc" not in runs[0][when]:
                continue
            row = [method, label, cell([r[when][f"{model}_test_acc"] for r in runs], len(seeds))]
            if stamen:
                values = [r[when][STAMEN_KEYS[model]] for r in ran if r[when].get(STAMEN_KEYS[model]) is not None]
                row.append(cell(values, len(seeds)))
            lines.append("| " + " | ".join(row) + " |")
    datasets = DATASET.split("+")
    lines += [
        "",
        "Per dataset (client), the authors' code, test accuracy (%) of the client models over the client's own test "
        f"graphs ({', '.join(str(c['test']) for c in authors['runs'][0]['clients'])}), mean ± std over the seeds:",
        "",
        "| method | round | " + " | ".join(datasets) + " |",
        "|---|---|" + "---|" * len(datasets),
    ]
    for method in METHODS:
        runs = [r for r in authors["runs"] if r["method"] == method]
        for when in ("best", "final") if runs else ():
            per = [cell([r[when]["client_test_acc_per_dataset"][d] for r in runs], len(seeds)) for d in datasets]
            lines.append(f"| {method} | {when} | " + " | ".join(per) + " |")
    rounds = {m: [r["best_round"] for r in authors["runs"] if r["method"] == m] for m in METHODS}
    seconds = {m: [r["seconds"] for r in authors["runs"] if r["method"] == m] for m in METHODS}
    lines += [
        "",
        "Best-validation rounds (authors' code, per seed): "
        + "; ".join(f"{m} {rounds[m]}" for m in METHODS if rounds[m])
        + (
            "; Stamen's: "
            + "; ".join(
                f"{m} {[r['best_round'] for r in stamen['results'] if r.get('algorithm') == m]}" for m in METHODS
            )
            if stamen
            else ""
        )
        + ". Seconds a run (one CPU thread, niced, on a shared 2-core machine): "
        + "; ".join(f"{m} {mean(seconds[m]):.0f}" for m in METHODS if seconds[m])
        + ".",
    ]
    atomic_write(markdown, "\n".join(lines) + "\n")
    print("\n".join(lines))
