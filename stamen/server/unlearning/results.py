"""The result of a federated unlearning run and its files, ``unlearn.json`` and ``unlearn.md``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stamen.common.file_writes import atomic_write
from stamen.contract import strict_json
from stamen.unlearn.report import COLUMNS


@dataclass
class UnlearningResult:
    """What a run's unlearning did and measured.

    Attributes:
        request: the request, as text.
        method: the method asked for (``unlearn-method``).
        method_used: the method that ran (``retrain`` after a fallback).
        clients: the clients of the run.
        seconds: wall time of the unlearning (roll call and method).
        training_seconds: wall time of the training before it.
        original, unlearned: pooled figures of the trained and the unlearned model.
        evaluated_clients: partitions whose counts the figures pool.
        info: the method's own figures, by phase (e.g. ``{"laf": {"rounds": 1}}``).
        fallback: why the method was replaced by retraining, or None.
    """

    request: str
    method: str
    method_used: str
    clients: int
    seconds: float
    training_seconds: float
    original: dict[str, Any]
    unlearned: dict[str, Any]
    evaluated_clients: list[int]
    info: dict[str, dict[str, Any]] = field(default_factory=dict)
    fallback: str | None = None

    @property
    def time_ratio_to_training(self) -> float | None:
        return self.seconds / self.training_seconds if self.training_seconds > 0 else None

    def as_dict(self) -> dict[str, Any]:
        """The JSON form of ``unlearn.json`` (each phase's figures under its own key)."""
        out: dict[str, Any] = {"request": self.request, "method": self.method, "clients": self.clients}
        out["method_used"] = self.method_used
        if self.fallback is not None:
            out["fallback"] = self.fallback
        out.update(self.info)
        out.update(
            {
                "seconds": self.seconds,
                "training_seconds": self.training_seconds,
                "time_ratio_to_training": self.time_ratio_to_training,
                "original": self.original,
                "unlearned": self.unlearned,
                "evaluated_clients": self.evaluated_clients,
            }
        )
        return out

    def summary(self) -> dict[str, Any]:
        """What the run's ``summary.json`` keeps of it."""
        full = self.as_dict()
        return {key: full[key] for key in ("request", "method_used", "seconds", "original", "unlearned")}


def markdown_table(result: UnlearningResult) -> str:
    """Original and unlearned figures side by side (figures that do not apply are left out)."""
    shown = [(key, label) for key, label in COLUMNS if result.original.get(key) is not None]
    lines = ["| model | " + " | ".join(label for _, label in shown) + " |", "|---" * (len(shown) + 1) + "|"]
    for name, figures in (("original", result.original), ("unlearned", result.unlearned)):
        lines.append(f"| {name} | " + " | ".join(f"{figures[key]:.3f}" for key, _ in shown) + " |")
    return "\n".join(lines)


def write_results(run_dir: Path, result: UnlearningResult) -> str:
    """Write ``unlearn.json`` and ``unlearn.md`` into ``run_dir`` (atomically); return the table."""
    atomic_write(run_dir / "unlearn.json", strict_json.dumps(result.as_dict(), indent=2) + "\n")
    table = markdown_table(result)
    atomic_write(run_dir / "unlearn.md", f"# Unlearning {result.request} ({result.method_used})\n\n{table}\n")
    return table
