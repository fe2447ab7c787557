"""The certificate report: one record per target and budget, its aggregates and its outputs.

:class:`CertificateReport` is what :func:`stamen.certify.pipeline.run` returns for every model
and mode: sample-wise, one :class:`TargetRecord` per target holding one
:class:`stamen.certify.outcome.BudgetOutcome` per budget; collective, one
:class:`stamen.certify.outcome.CollectiveOutcome` per budget.

Per budget (:class:`BudgetAggregate`): *certified accuracy* (share of targets that are
correctly classified and certified), *certified ratio* (share certified, right or
wrong), the number of ``unknown`` targets (a solver limit: never counted as
certified), median and max seconds per target, and how many targets needed a MILP.
``stamen certify`` writes one report per architecture to ``certificate.json`` (atomic
writes), a figure and ``report.md``.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
from rich.table import Table

from stamen.certify.outcome import BudgetOutcome, CollectiveOutcome, Status
from stamen.common.file_writes import atomic_write
from stamen.common.pictures import DPI, MARKERS, PALETTE, new_figure

if TYPE_CHECKING:
    from stamen.certify.task import CertificationTask


@dataclass
class TargetRecord:
    """One target: its original node id and class, the clean prediction and every budget."""

    node: int
    label: int  # original class id
    predicted: int  # original class id
    correct: bool
    clean_score: float  # binary: the score (>= 0 predicts the first class); else the smallest margin
    budgets: dict[int, BudgetOutcome]

    def as_dict(self) -> dict:
        return {
            "node": self.node,
            "label": self.label,
            "predicted": self.predicted,
            "correct": self.correct,
            "clean_score": self.clean_score,
            "budgets": {str(k): b.as_dict() for k, b in self.budgets.items()},
        }


@dataclass
class BudgetAggregate:
    """The targets' certificates at one budget, summed up."""

    certified_accuracy: float
    certified_ratio: float
    unknown: int
    not_certified: int
    median_seconds: float
    max_seconds: float
    needed_milp: int
    num_targets: int

    @property
    def unknown_ratio(self) -> float:
        return self.unknown / self.num_targets if self.num_targets else 0.0


@dataclass
class CertificateReport:
    """The certificate of one task (one kernel): sample-wise targets or collective counts."""

    task: CertificationTask = field(repr=False)
    C: float | None
    ridge: float | None
    clean_accuracy: float
    num_targets: int
    targets: list[TargetRecord]  # sample-wise (empty for collective)
    collective: dict[int, CollectiveOutcome]  # collective (empty for sample-wise)
    seconds: float  # kernel and certificate
    cv_accuracy: dict[str, float] | None = None

    def aggregates(self) -> dict[int, BudgetAggregate]:
        """Per-budget aggregates of the sample-wise records."""
        out = {}
        n = max(len(self.targets), 1)
        correct = np.array([t.correct for t in self.targets], dtype=bool)
        for k in self.task.budgets:
            recs = [t.budgets[k] for t in self.targets]
            cert = np.array([r.status == Status.CERTIFIED for r in recs], dtype=bool)
            secs = np.array([r.seconds for r in recs], dtype=float)
            out[k] = BudgetAggregate(
                certified_accuracy=float((cert & correct).sum() / n),
                certified_ratio=float(cert.sum() / n),
                unknown=int(sum(r.status == Status.UNKNOWN for r in recs)),
                not_certified=int(sum(r.status == Status.NOT_CERTIFIED for r in recs)),
                median_seconds=float(np.median(secs)) if len(secs) else 0.0,
                max_seconds=float(np.max(secs)) if len(secs) else 0.0,
                needed_milp=int(sum(r.milp for r in recs)),
                num_targets=len(self.targets),
            )
        return out

    def as_dict(self) -> dict:
        """The JSON record of this report (one architecture of ``certificate.json``)."""
        out: dict = {
            "num_targets": self.num_targets,
            "C": self.C,
            "ridge": self.ridge,
            "clean_accuracy": self.clean_accuracy,
            "kernel_seconds_total": self.seconds,
        }
        if self.cv_accuracy is not None:
            out["cv_accuracy"] = self.cv_accuracy
        if self.task.mode == "collective":
            out["collective"] = {str(k): c.as_dict() for k, c in self.collective.items()}
        else:
            out["aggregates"] = {str(k): asdict(a) for k, a in self.aggregates().items()}
            out["targets"] = [t.as_dict() for t in self.targets]
        return out


def print_tables(payload: dict, console) -> None:
    """One rich table per budget (rows: architectures)."""
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


def plot(payload: dict, path: Path | BinaryIO) -> None:
    """Certified accuracy (sample-wise) or certified share (collective) vs budget."""
    # on use: matplotlib stays out of this module's import

    fig = new_figure(5.5, 3.8)
    ax = fig.subplots()
    ks = payload["budgets"]
    for index, (arch, res) in enumerate(payload["architectures"].items()):
        if payload["mode"] == "collective":
            vals = [res["collective"][str(k)]["certified_lower_bound"] / max(res["num_targets"], 1) for k in ks]
            points = list(zip(ks, vals))
        else:
            vals = [res["aggregates"][str(k)]["certified_accuracy"] for k in ks]
            # k = 0: no flip, so the certified accuracy is the clean accuracy on the targets
            points = ([] if 0 in ks else [(0, res["clean_accuracy"])]) + list(zip(ks, vals))
        look = {"marker": MARKERS[index % len(MARKERS)], "color": PALETTE[index % len(PALETTE)]}
        ax.plot([k for k, _ in points], [100 * v for _, v in points], label=arch, **look)
    ax.set_xlabel("label flips k")
    ax.set_ylabel("certified accuracy (%)" if payload["mode"] != "collective" else "certified targets (%)")
    ax.set_ylim(-2, 102)
    ax.set_xticks(sorted({0, *ks}) if payload["mode"] != "collective" else ks)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(f"{payload['dataset']}: {payload['mode']} label-flip certificate")
    fig.savefig(path, dpi=DPI, format="png", bbox_inches="tight")


def markdown(payload: dict) -> str:
    """``report.md``: the run's settings and one table per architecture."""
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
    """``certificate.json``, ``certified_accuracy.png`` and ``report.md`` in ``out_dir``.

    Each file is written to a temporary name in ``out_dir`` and renamed into place, so
    a file is either the old one or the complete new one.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    # Strict JSON (Stamen's rule, as in stamen.contract.strict_json): a non-finite float is null, never a bare NaN
    text = json.dumps(clean_floats(payload), indent=1, default=_json_default, allow_nan=False)
    atomic_write(out_dir / "certificate.json", text.encode())
    picture = io.BytesIO()  # drawn in memory: only the atomic write below touches the folder
    plot(payload, picture)
    atomic_write(out_dir / "certified_accuracy.png", picture.getvalue())
    atomic_write(out_dir / "report.md", markdown(payload).encode())
    for entry in out_dir.iterdir():  # a staging file an interrupted write left: this job's own, replaced above
        if entry.name.startswith(STAGING_PREFIXES) and entry.is_file() and not entry.is_symlink():
            entry.unlink(missing_ok=True)


# The temporary files of atomic_write (``.NAME.<random>.tmp``) that a killed writer may leave
OUTPUT_FILES = ("certificate.json", "certified_accuracy.png", "report.md")
STAGING_PREFIXES = tuple(f".{name}." for name in OUTPUT_FILES)


def _json_default(o: object) -> object:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return None if not np.isfinite(o) else float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o)}")


def clean_floats(obj: object) -> object:
    """Replace non-finite floats by ``None`` so the JSON is standard."""
    if isinstance(obj, dict):
        return {k: clean_floats(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_floats(v) for v in obj]
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj
