"""The figures of a request as a rich table, a Markdown report and a bar plot."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from rich.table import Table

from stamen.common.pictures import PALETTE, new_figure

COLUMNS = (
    ("acc_remaining", "Dr acc"),
    ("acc_forget", "Df acc"),
    ("test_global", "test acc"),
    ("test_client", "client test"),
    ("test_forgotten_class", "forgot-class test"),
    ("test_other_classes", "other-class test"),
    ("mia_auc", "MIA AUC"),
    ("gap_closure", "gap closure"),
    ("seconds", "seconds"),
    ("time_ratio", "time / retrain"),
)


def columns(result: dict[str, Any]) -> list[tuple[str, str]]:
    """The columns that apply to the request (client test for client/node, class tests for class)."""
    skip = {"test_forgotten_class", "test_other_classes"} if result["kind"] != "class" else {"test_client"}
    return [(key, label) for key, label in COLUMNS if key not in skip]


def fmt(value: Any, key: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if key == "seconds":
        return f"{value:.3f}"
    if key == "time_ratio":
        return f"{value:.4f}"
    return f"{value:.3f}"


def title(result: dict[str, Any]) -> str:
    return (
        f"{result['request']} on {result['dataset']} ({result['model']}, {result['num_clients']} clients, "
        f"{result['partitioner']}, {result['rounds']} rounds): {result['num_forget']} forgotten nodes, "
        f"mean over seeds {','.join(map(str, result['seeds']))}"
    )


def rich_table(result: dict[str, Any]):
    table = Table(title=title(result))
    table.add_column("method", overflow="fold")
    for _, label in columns(result):
        table.add_column(label, justify="right", overflow="fold")
    for name in result["methods"]:
        row = result["mean"][name]
        table.add_row(name, *(fmt(row.get(key), key) for key, _ in columns(result)))
    return table


def targets_table(result: dict[str, Any]):
    table = Table(title="targets")
    for name in ("method", "target", "value", "threshold", "met", "missed by"):
        table.add_column(name, overflow="fold")
    for check in result["targets"]:
        table.add_row(
            check["method"],
            check["target"],
            fmt(check["value"]),
            check["threshold"],
            met_text(check).upper() if check["met"] is False else met_text(check),  # a miss stands out on screen
            fmt(check.get("missed_by")),
        )
    return table


def met_text(check: dict[str, Any]) -> str:
    """``yes``, ``no``, ``-`` (no figure) or the check's note (why it was not judged)."""
    return check.get("note") or {True: "yes", False: "no", None: "-"}[check["met"]]


def mia_gap_line(result: dict[str, Any]) -> str:
    """The gap closure's denominator, AUC_original - AUC_retrain, with its spread over seeds."""
    gap = result.get("mia_gap") or {}
    return (
        f"MIA gap AUC_original - AUC_retrain: {fmt(gap.get('mean'))} "
        f"(std over seeds {fmt(gap.get('std'))}); gap closure is only as reliable as this gap is large "
        "(its target is checked only where the gap is at least 0.02 and twice its spread)."
    )


def method_lines(result: dict[str, Any]) -> list[str]:
    """The mean figures of every method as a Markdown table."""
    cols = columns(result)
    lines = ["| method | " + " | ".join(label for _, label in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name in result["methods"]:
        row = result["mean"][name]
        lines.append(f"| {name} | " + " | ".join(fmt(row.get(k), k) for k, _ in cols) + " |")
    return lines


def target_lines(result: dict[str, Any]) -> list[str]:
    """The targets as a Markdown table, with how far each missed one falls short."""
    lines = ["| method | target | value | threshold | met | missed by |", "|---|---|---|---|---|---|"]
    for c in result["targets"]:
        met = met_text(c)
        threshold = c["threshold"].replace("|", "\\|")  # a literal pipe would split the cell
        lines.append(
            f"| {c['method']} | {c['target']} | {fmt(c['value'])} | {threshold} | {met} | {fmt(c.get('missed_by'))} |"
        )
    return lines


def markdown(result: dict[str, Any], command: str = "") -> str:
    lines = [f"# Unlearning {result['request']}", "", title(result) + ".", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += method_lines(result) + ["", mia_gap_line(result), "", "## Targets", ""] + target_lines(result)
    lines += [
        "",
        "Accuracies on Dr and test nodes are measured on the remaining graphs (forgotten nodes and their edges",
        "removed); Df accuracy and the membership-inference features on the graphs as trained. Gap closure is",
        "(AUC_original - AUC_method) / (AUC_original - AUC_retrain) from the mean AUCs. Seconds: the method's wall",
        "time (retrain: in-process FedAvg from scratch on the remaining federation).",
        "",
    ]
    return "\n".join(lines)


def unlearning_figure(result: dict[str, Any]) -> Figure:
    """``unlearning.png``'s figure: per method (one colour and hatch each), its mean figures with ± std over
    seeds as bars from 0 (the figures share one 0-1 scale), each bar's value printed on it."""
    # on use: numpy stays out of this module's import
    import numpy as np

    keys = [k for k, _ in columns(result) if k not in ("seconds", "time_ratio", "gap_closure")]
    labels = dict(COLUMNS)
    names = result["methods"]
    figure = new_figure(max(9.0, 1.5 * len(keys)), 4.8)
    axis = figure.subplots()
    width = 0.8 / len(names)
    hatches = ("", "//", "..", "xx", "\\\\", "--", "++", "oo")
    for i, name in enumerate(names):
        values = [result["mean"][name].get(k) for k in keys]
        errors = [result["std"][name].get(k) or 0.0 for k in keys]
        drawn = axis.bar(
            np.arange(len(keys)) + i * width,
            [np.nan if v is None else v for v in values],
            width,
            yerr=errors,
            label=name,
            color=PALETTE[i % len(PALETTE)],
            hatch=hatches[i % len(hatches)],
            edgecolor="white",
            error_kw={"elinewidth": 0.8, "capsize": 2},
        )
        # each bar's value on it: a bar at zero (a class fully forgotten) is otherwise invisible
        axis.bar_label(drawn, labels=["" if v is None else f"{v:.2f}" for v in values], fontsize=7, padding=2,
                       rotation=90 if len(names) > 2 else 0)  # fmt: skip
    axis.set_xticks(np.arange(len(keys)) + 0.4 - width / 2, [labels[k] for k in keys], fontsize=9)
    axis.set_ylim(0, 1.18)
    axis.set_yticks(np.linspace(0, 1, 6))
    axis.set_ylabel("accuracy, or AUC for MIA\n(mean ± std over seeds)")
    axis.set_title(f"unlearning {result['request']} ({result['dataset']}, {result['num_clients']} clients)")
    axis.legend(fontsize=8, ncol=min(len(names), 4), loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    axis.grid(axis="y", alpha=0.3)
    figure.text(
        0.5,
        0.0,
        "Dr: the remaining training nodes; Df: the forgotten ones; MIA AUC: a membership-inference attack "
        "telling forgotten from unseen nodes (0.5: it cannot)",
        fontsize=8,
        color="dimgrey",
        ha="center",
        va="top",
    )
    return figure
