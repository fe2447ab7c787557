r"""The figures over seeds and the targets against retraining of ``stamen unlearn`` and ``stamen bench unlearn``.

Figures are averaged over seeds. Gap closure compares membership-inference AUCs,
:math:`(\mathrm{AUC}_{orig} - \mathrm{AUC}_{m}) / (\mathrm{AUC}_{orig} - \mathrm{AUC}_{retrain})`, from the mean
AUCs; the time ratio is a method's wall time over retraining's (mean of per-seed ratios).
"""

from __future__ import annotations

import statistics
from typing import Any

from stamen.contract.unlearn_methods import UNLEARN_METHOD_SPECS
from stamen.unlearn.evaluate import METRICS


def mia_gap(per_seed: list[dict[str, Any]]) -> dict[str, float | None]:
    r"""The gap-closure denominator :math:`\mathrm{AUC}_{orig} - \mathrm{AUC}_{retrain}`: its mean and its spread
    over seeds. Gap closure means something only where the mean gap is well above the spread."""
    gaps = [
        s["rows"]["original"]["mia_auc"] - s["rows"]["retrain"]["mia_auc"]
        for s in per_seed
        if s["rows"]["original"]["mia_auc"] is not None and s["rows"]["retrain"]["mia_auc"] is not None
    ]
    return {
        "mean": statistics.fmean(gaps) if gaps else None,
        "std": statistics.pstdev(gaps) if len(gaps) > 1 else None,
    }


def gap_closure(original: float | None, method: float | None, retrain: float | None) -> float | None:
    r"""Gap closure :math:`(\mathrm{AUC}_{orig} - \mathrm{AUC}_m) / (\mathrm{AUC}_{orig} - \mathrm{AUC}_{retrain})`.

    ``None`` where undefined (a missing AUC, or retraining's AUC equal to the original's).
    """
    if None in (original, method, retrain) or abs(original - retrain) < 1e-12:
        return None
    return (original - method) / (original - retrain)


def mean_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in (*METRICS, "seconds", "time_ratio"):
        values = [r.get(key) for r in rows if r.get(key) is not None]
        out[key] = statistics.fmean(values) if values else None
    return out


def std_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in (*METRICS, "seconds", "time_ratio"):
        values = [r.get(key) for r in rows if r.get(key) is not None]
        out[key] = statistics.pstdev(values) if len(values) > 1 else (0.0 if values else None)
    return out


def measurable(gap: dict[str, float | None] | None) -> bool:
    """Whether the MIA gap (:func:`mia_gap`) is large enough for gap closure to mean anything:
    at least 0.02 and twice its spread over seeds."""
    if not gap or gap.get("mean") is None:
        return False
    return gap["mean"] >= max(0.02, 2 * (gap.get("std") or 0.0))


def check_targets(
    kind: str, mean: dict[str, dict[str, Any]], methods: list[str], gap: dict[str, float | None] | None = None
) -> list[dict[str, Any]]:
    """The targets against retraining, per method where they apply: value, threshold, met.

    ``met`` is ``None`` where a target cannot be checked: a missing figure, or gap closure
    when the MIA ``gap`` is not :func:`measurable` (then ``note`` says why).
    """
    checks: list[dict[str, Any]] = []
    retrain = mean["retrain"]

    def add(method: str, name: str, value: float | None, threshold: str, met: bool | None, note: str = "") -> None:
        checks.append(
            {
                "method": method,
                "target": name,
                "value": value,
                "threshold": threshold,
                "met": met,
                "missed_by": missed_by(value, threshold) if met is False else None,
                "note": note,
            }
        )

    for method in methods:
        row = mean[method]
        if kind == "class":
            diff = _diff(row["test_forgotten_class"], retrain["test_forgotten_class"])
            add(
                method,
                "forgotten-class test acc - retrain's",
                diff,
                "|x| <= 0.02",
                None if diff is None else abs(diff) <= 0.02,
            )
            diff = _diff(row["test_other_classes"], retrain["test_other_classes"])
            add(
                method,
                "other-classes test acc - retrain's",
                diff,
                "|x| <= 0.02",
                None if diff is None else abs(diff) <= 0.02,
            )
        else:
            diff = _diff(row["test_global"], retrain["test_global"])
            add(method, "test acc - retrain's", diff, ">= -0.02", None if diff is None else diff >= -0.02)
            bar = 0.7 if kind == "client" else 0.5
            closure = row.get("gap_closure")
            if measurable(gap):
                add(method, "MIA gap closure", closure, f">= {bar}", None if closure is None else closure >= bar)
            else:
                add(method, "MIA gap closure", closure, f">= {bar}", None, "not measurable: MIA gap within noise")
            diff = _diff(row["acc_forget"], retrain["acc_forget"])
            add(method, "Df acc - retrain's", diff, "|x| <= 0.05", None if diff is None else abs(diff) <= 0.05)
        budget = UNLEARN_METHOD_SPECS[method].time_budget
        if budget is not None:
            ratio = row["time_ratio"]
            add(method, "wall time / retrain's", ratio, f"<= {budget}", None if ratio is None else ratio <= budget)
    return checks


def missed_by(value: float, threshold: str) -> float:
    """How far ``value`` lies outside ``threshold`` (``|x| <= b``, ``>= b`` or ``<= b``), as a positive number."""
    relation, _, bound = threshold.rpartition(" ")
    bound = float(bound)
    if relation == "|x| <=":
        return abs(value) - bound
    if relation == ">=":
        return bound - value
    return value - bound


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b
