"""Aggregates, tables, JSON, figure and Markdown report of a certification run.

Per budget and architecture: *certified accuracy* (share of targets that are
correctly classified and certified), *certified ratio* (share certified, right or
wrong), the number of ``unknown`` targets (time limit hit: never counted as
certified), median and max seconds per target, and how many targets needed a MILP.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from certify.milp import CERTIFIED, UNKNOWN


def aggregate_samplewise(targets: list[dict], budgets: list[int]) -> dict[str, dict]:
    """Per-budget aggregates from per-target records (see :func:`target_record`)."""
    out = {}
    n = max(len(targets), 1)
    for k in budgets:
        recs = [t["budgets"][str(k)] for t in targets]
        cert = np.array([r["status"] == CERTIFIED for r in recs], dtype=bool)
        correct = np.array([t["correct"] for t in targets], dtype=bool)
        secs = np.array([r["seconds"] for r in recs], dtype=float)
        out[str(k)] = {
            "certified_accuracy": float((cert & correct).sum() / n),
            "certified_ratio": float(cert.sum() / n),
            "unknown": int(sum(r["status"] == UNKNOWN for r in recs)),
            "not_certified": int(sum(r["status"] == "not_certified" for r in recs)),
            "median_seconds": float(np.median(secs)) if len(secs) else 0.0,
            "max_seconds": float(np.max(secs)) if len(secs) else 0.0,
            "needed_milp": int(sum(bool(r.get("needed_milp")) for r in recs)),
            "num_targets": len(targets),
        }
    return out


def print_tables(payload: dict, console) -> None:
    """One rich table per budget (rows: architectures)."""
    from rich.table import Table

    for k in payload["budgets"]:
        table = Table(title=f"budget k = {k} ({payload['mode']}, {payload['model']})")
        if payload["mode"] == "collective":
            for col in ("arch", "status", "max changed", "proven upper bound", "certified >=", "targets", "seconds"):
                table.add_column(col, overflow="fold")
            for arch, res in payload["architectures"].items():
                c = res["collective"][str(k)]
                table.add_row(
                    arch,
                    c["status"],
                    str(c.get("max_changed")),
                    str(c["changed_upper_bound"]),
                    str(c["certified_lower_bound"]),
                    str(res["num_targets"]),
                    f"{c['seconds']:.2f}",
                )
        else:
            for col in ("arch", "cert. acc.", "cert. ratio", "unknown", "median s", "max s", "MILP"):
                table.add_column(col, overflow="fold")
            for arch, res in payload["architectures"].items():
                a = res["aggregates"][str(k)]
                table.add_row(
                    arch,
                    f"{100 * a['certified_accuracy']:.1f}%",
                    f"{100 * a['certified_ratio']:.1f}%",
                    str(a["unknown"]),
                    f"{a['median_seconds']:.3f}",
                    f"{a['max_seconds']:.3f}",
                    f"{a['needed_milp']}/{a['num_targets']}",
                )
        console.print(table)


def plot(payload: dict, path: Path) -> None:
    """Certified accuracy (sample-wise) or certified share (collective) vs budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ks = payload["budgets"]
    for arch, res in payload["architectures"].items():
        if payload["mode"] == "collective":
            vals = [res["collective"][str(k)]["certified_lower_bound"] / max(res["num_targets"], 1) for k in ks]
        else:
            vals = [res["aggregates"][str(k)]["certified_accuracy"] for k in ks]
        ax.plot(ks, [100 * v for v in vals], marker="o", label=arch)
    ax.set_xlabel("label flips k")
    ax.set_ylabel("certified accuracy (%)" if payload["mode"] != "collective" else "certified targets (%)")
    ax.set_ylim(-2, 102)
    ax.set_xticks(ks)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(f"{payload['dataset']}: {payload['mode']} label-flip certificate")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def markdown(payload: dict) -> str:
    inst = payload["instance"]
    lines = [
        f"# Label-flip certificate: {payload['dataset']}",
        "",
        f"- command: `{payload['command']}`",
        f"- model: {payload['model']}, mode: {payload['mode']}, NTK variant: {payload['ntk_variant']}",
        f"- solver: {payload['solver']['name']} (time limit {payload['solver']['time_limit']} s per MILP)",
        f"- nodes {inst['num_nodes']}, edges {inst['num_edges']}, features {inst['num_features']}, "
        f"classes {inst['classes']}, labelled {inst['num_labeled']}, targets {inst['num_targets']}",
        f"- attacker: {payload['attacker']}",
        "",
        "Certified accuracy counts targets that are correctly classified *and* certified;",
        "`unknown` targets (solver limit) are never counted as certified.",
        "",
    ]
    for arch, res in payload["architectures"].items():
        lines.append(f"## {arch} (C = {res['C']}, clean accuracy {100 * res['clean_accuracy']:.1f}%)")
        lines.append("")
        if payload["mode"] == "collective":
            lines.append("| k | status | max changed | proven upper bound | certified >= |")
            lines.append("|---|---|---|---|---|")
            for k in payload["budgets"]:
                c = res["collective"][str(k)]
                lines.append(
                    f"| {k} | {c['status']} | {c.get('max_changed')} | {c['changed_upper_bound']} | "
                    f"{c['certified_lower_bound']} / {res['num_targets']} |"
                )
        else:
            lines.append("| k | certified accuracy | certified ratio | unknown | median s | max s | needed MILP |")
            lines.append("|---|---|---|---|---|---|---|")
            for k in payload["budgets"]:
                a = res["aggregates"][str(k)]
                lines.append(
                    f"| {k} | {100 * a['certified_accuracy']:.1f}% | {100 * a['certified_ratio']:.1f}% | "
                    f"{a['unknown']} | {a['median_seconds']:.3f} | {a['max_seconds']:.3f} | "
                    f"{a['needed_milp']}/{a['num_targets']} |"
                )
        lines.append("")
    lines.append("![certified accuracy](certified_accuracy.png)")
    return "\n".join(lines) + "\n"


def write_outputs(out_dir: Path, payload: dict) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "certificate.json").write_text(json.dumps(payload, indent=1, default=_json_default))
    plot(payload, out_dir / "certified_accuracy.png")
    (out_dir / "report.md").write_text(markdown(payload))


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o)}")


def clean_floats(obj):
    """Replace non-finite floats by ``None`` so the JSON is standard."""
    if isinstance(obj, dict):
        return {k: clean_floats(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_floats(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj
