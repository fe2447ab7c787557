"""What a run reports: its summary (final and best-validation figures), tables, the model and curves.

The folder these go to, and every rule about it, is :class:`stamen.server.rundir.RunDirectory`.
A figure read back may be ``null`` (a non-finite value is written so, :mod:`stamen.contract.strict_json`)
or NaN (in files of earlier versions): both count as no figure here.
"""

from __future__ import annotations

import importlib
import io
import math
import sys
import threading
from pathlib import Path
from typing import Any

from flwr.app import ArrayRecord

from stamen.common.file_writes import atomic_write
from stamen.common.pictures import figure_bytes
from stamen.contract.equivalences import config_notes, run_notes
from stamen.contract.figures import (
    CLIENT_DP_EPSILON,
    CLUSTER_SPLITS,
    CLUSTERS,
    FINAL_TEST_ACC,
    LINK_SETS,
    SUMMARY_FIGURES,
    TEST_ACC,
    VAL_ACC,
    Row,
    headline,
    headline_keys,
    link_figure,
    setting_acc,
)
from stamen.contract.protocol import SETTINGS
from stamen.contract.run_config import RunConfig
from stamen.contract.tasks import TASKS, examples, task_spec
from stamen.graphs.names import client_datasets, is_dataset_list
from stamen.server.curves import curves_figure
from stamen.server.loop import FailureCategory
from stamen.server.rundir import CURVES_FILE, CURVES_PNG


def summarize(rows: list[Row], wall_seconds: float, config: RunConfig) -> dict[str, Any]:
    """Final-round and best-validation figures of a run.

    The best round is chosen on the task's headline validation figure (its spec's ``headline``: accuracy, AUC,
    ...; the global model's when there is one, else the local models'), never on test figures.
    The final and best parts hold the figures of the run's task (:func:`summary_figures`), and any
    other figure the rows hold.
    """
    spec = TASKS[config.task]
    selector = next((key for key in headline_keys("val", spec.headline) if any(key in r for r in rows)), VAL_ACC)
    candidates = [r for r in rows if _is_figure(r.get(selector))]
    best = max(candidates, key=lambda r: r[selector]) if candidates else {}
    final = rows[-1] if rows else {}
    trained = [r for r in rows if "seconds" in r]
    failures = failure_counts(rows)
    seconds = [r["seconds"] for r in trained]
    tested = [headline(r) for r in rows]
    train_max = [r["client_train_seconds_max"] for r in trained]
    train_sum = [r.get("client_train_seconds_sum", 0.0) for r in trained]
    kept = summary_figures(config, final, best)
    summary = {
        "task": config.task,
        "algorithm": config.algorithm,
        "dataset": config.dataset,
        "model": config.model,
        "rounds": len(trained),
        "clients": trained[-1]["clients"] if trained else 0,
        "devices": sorted({d for r in trained for d in r.get("devices", [])}),
        **process_figures(trained),
        "final": {key: final.get(key) for key in kept},
        "best_round": best.get("round"),
        "best": {key: best.get(key) for key in kept},
        "max_test_acc": max((a for a in tested if _is_figure(a)), default=None),
        "wall_seconds": wall_seconds,
        "seconds_per_round": sum(seconds) / len(seconds) if seconds else None,
        # per round: the slowest client's local training, and all clients' together
        "client_train_seconds_per_round": sum(train_max) / len(train_max) if train_max else None,
        "clients_train_seconds_per_round": sum(train_sum) / len(train_sum) if train_sum else None,
        # a round that went on without some clients: the figures are not those of the full federation
        "failed_clients": failures,
        "degraded": sum(failures.values()) > 0,
        "fairness": fairness(final),
        "settings": settings_on(config),
    }
    if is_dataset_list(config.dataset):  # cross-dataset: which dataset each client that reported held
        reported = sorted(map(int, final.get("per_client", {})))
        held = client_datasets(config.dataset, max(reported, default=-1) + 1)
        summary["client_datasets"] = {str(pid): held[pid] for pid in reported}
    if config.privacy != "none":
        summary["privacy"] = privacy_summary(final, summary["final"], config)
    if any(link_figure(edges, "hits", True) in spec.figures for edges in LINK_SETS):  # its figures have a K
        summary["hits_at_k"] = hits_at_k_note(summary["final"], config.hits_k)
    summary.update(cluster_summary(rows))
    notes = [*config_notes(config), *run_notes(rows)]  # the algorithm computed what another does: said once
    if notes:
        summary["notes"] = notes
    return summary


def cluster_summary(rows: list[Row]) -> dict[str, Any]:
    """A clustering algorithm's (GCFL's) final clusters and every split of the run, from its rows; nothing for
    a run whose rows have no clusters."""
    clustered = [row for row in rows if CLUSTERS in row]
    if not clustered:
        return {}
    return {CLUSTERS: clustered[-1][CLUSTERS], CLUSTER_SPLITS: [s for row in rows for s in row.get(CLUSTER_SPLITS, [])]}


def hits_at_k_note(final: dict[str, Any], k: int) -> dict[str, Any]:
    """What a link-prediction run's Hits@K figures (``*_hits``) are: K, and the figures that are not computable at
    the last round (an edge set scored, by its AUC, but no client held K non-edges of it), with why."""
    note: dict[str, Any] = {"k": k, "figure": f"hits@{k}"}
    missing = [
        link_figure(edges, "hits", model)
        for model in (True, False)
        for edges in LINK_SETS
        if final.get(link_figure(edges, "hits", model)) is None
        and _is_figure(final.get(link_figure(edges, "auc", model)))
    ]
    if missing:
        note["not_computable"] = missing
        note["reason"] = (
            f"no client held {k} non-edges of the set: Hits@{k} counts the edges scored above the non-edge ranked {k}, "
            f"and there is none (a smaller hits-k, or more edges per client, gives the figure)"
        )
    return note


def summary_figures(config: RunConfig, *parts: Row) -> list[str]:
    """The figures a summary's final and best parts hold, in :data:`SUMMARY_FIGURES`' order: those of the run's
    task (its spec's ``figures``) but an evaluation setting's the run did not turn on, and any other figure one
    of ``parts`` (rows) holds. Another task's figures, which no row of this run has, are left out."""
    off = {setting_acc(s, g) for s in SETTINGS if s not in settings_on(config) for g in (True, False)}
    task = set(TASKS[config.task].figures) - off
    return [key for key, _ in SUMMARY_FIGURES if key in task or any(part.get(key) is not None for part in parts)]


def settings_on(config: RunConfig) -> list[str]:
    """The evaluation settings besides the seen graph that the run config asks for (:mod:`stamen.graphs.settings`)."""
    on = {
        "unseen-node": config.unseen_node_frac > 0,
        "missing-class": config.missing_classes > 0,
        "new-client": config.new_client,
    }
    return [setting for setting in SETTINGS if on[setting]]


def process_figures(rows: list[Row]) -> dict[str, Any]:
    """The nodes and processes that answered the clients' messages over the run, and their peak memories added up
    (each process's largest report): the clients' side of a run on every node of a Ray cluster."""
    peaks: dict[str, float] = {}
    for row in rows:
        for name, peak in row.get("client_processes", {}).items():
            peaks[name] = max(peaks.get(name, 0.0), float(peak))
    return {
        "client_nodes": sorted({name.rsplit(" pid ", 1)[0] for name in peaks}),
        "client_processes": len(peaks),
        "client_peak_memory_gb": sum(peaks.values()) / 1024,
    }


def fairness(row: Row) -> dict[str, Any]:
    """How the final model's test accuracy (link prediction: AUC) spreads over the clients: min, mean, max and
    std (population)."""
    clients = row.get("per_client", {})
    key = next((k for k in headline_keys("test") if any(k in c for c in clients.values())), TEST_ACC)
    values = [c[key] for c in clients.values() if _is_figure(c.get(key))]
    if not values:
        return {}
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    worst = min((pid for pid in clients if _is_figure(clients[pid].get(key))), key=lambda pid: clients[pid][key])
    return {
        "figure": key,
        "clients": len(values),
        "min": min(values),
        "mean": mean,
        "max": max(values),
        "std": std,
        "worst_client": int(worst),
    }


def _is_figure(value: Any) -> bool:
    """A number that is a figure: not ``None`` (``null`` in the file), not NaN, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def _shown(value: Any, spec: str = ".3f") -> str:
    """``value`` formatted, or ``-`` where there is no figure."""
    return format(value, spec) if _is_figure(value) else "-"


def failure_counts(rows: list[Row]) -> dict[str, int]:
    """How many client replies failed over the run, by category (``lost``, ``error``, ``malformed``)."""
    counts = {category.value: 0 for category in FailureCategory}
    for row in rows:
        for failure in [*row.get("failed_clients", []), *row.get("final_eval_failed_clients", [])]:
            category = failure.get("category", FailureCategory.LOST.value)
            counts[category] = counts.get(category, 0) + 1
    return counts


def privacy_summary(final_row: Row, final: dict[str, Any], config: RunConfig) -> dict[str, Any]:
    """The privacy spent by the end of the run, beside the accuracy it bought.

    DP-SGD: each client's epsilon (composed over the rounds it trained in);
    client-level DP: one epsilon for every client.
    """
    figures = {"privacy": config.privacy, "delta": config.target_delta, FINAL_TEST_ACC: headline(final)}
    if config.privacy == "dp-sgd":
        figures.update(epsilon=final_row.get("epsilon", {}), epsilon_max=final_row.get("epsilon_max"))
    else:
        figures.update(clipping=config.clipping, epsilon_max=final_row.get(CLIENT_DP_EPSILON))
    return figures


def privacy_table(privacy: dict[str, Any], task: str | None = None) -> str:
    """Final epsilon per client (DP-SGD) or for all clients (client-level DP), and the headline test figure
    of the run's ``task`` (its spec's headline: accuracy, AUC, ...)."""
    lines = [f"{'client':>8}  {'epsilon':>10}", "-" * 20]
    for client, epsilon in privacy.get("epsilon", {}).items():
        lines.append(f"{client:>8}  {_shown(epsilon, '>10.4f'):>10}")
    if privacy["privacy"] == "client-dp":
        lines.append(f"{'all':>8}  {_shown(privacy['epsilon_max'], '>10.4f'):>10}")
    accuracy = _shown(privacy[FINAL_TEST_ACC], ".4f")
    spec = task_spec(task)
    figure = f"test {spec.headline_label if spec is not None else 'accuracy'}"
    lines.append(f"{privacy['privacy']} at delta={privacy['delta']:g}; {figure} {accuracy}")
    return "\n".join(lines)


POOLED_OVER = {"test": "test", "val": "validation"} | {setting.replace("-", "_"): setting for setting in SETTINGS}


def figure_label(key: str, label: str, unit: str = "nodes") -> str:
    """A summary figure's label saying how it pools: an accuracy is pooled over all clients' nodes (each node
    counts once; ``unit``: a graph-classification run's graphs), never a mean over clients (that is the
    per-client line's)."""
    if not key.endswith("_acc"):
        return label
    kind = key.removeprefix("global_").removesuffix("_acc")
    pooled = f"pooled over all clients' {POOLED_OVER[kind] + ' ' if kind in POOLED_OVER else ''}{unit}"
    return f"{label[:-1]}, {pooled})" if label.endswith(")") else f"{label} ({pooled})"


def _shown_setting(key: str, summary: dict[str, Any]) -> bool:
    """False for the figure of an evaluation setting the run did not turn on (a summary of an earlier version,
    without ``settings``, shows every figure it holds)."""
    on = summary.get("settings")
    if on is None:
        return True
    return not any(key in (setting_acc(s, True), setting_acc(s, False)) for s in SETTINGS if s not in on)


def summary_table(summary: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(figure, final, best-validation) rows, formatted, for a table on screen."""

    def fmt(value: Any) -> str:
        return _shown(value, ".4f")

    k = (summary.get("hits_at_k") or {}).get("k")
    rows = [
        (
            figure_label(
                key, label if k is None else label.replace("Hits@K", f"Hits@{k}"), examples(summary.get("task"))
            ),
            fmt(summary["final"].get(key)),
            fmt(summary["best"].get(key)),
        )
        for key, label in SUMMARY_FIGURES
        if (summary["final"].get(key) is not None or summary["best"].get(key) is not None)
        and _shown_setting(key, summary)
    ]
    rows.append(("round", str(summary["rounds"]), str(summary["best_round"])))
    return rows


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """What the run was for besides accuracy, one line each: what its algorithm equalled (``notes``), privacy
    spent, certificates, unlearning, how accuracy spreads over the clients, failed clients."""
    lines = [f"note: {note}" for note in summary.get("notes", [])]
    privacy = summary.get("privacy")
    if privacy:
        spent = f"epsilon {_shown(privacy.get('epsilon_max'))}"
        where = "the most any client spent" if privacy["privacy"] == "dp-sgd" else "every client"
        lines.append(f"privacy: {privacy['privacy']} at delta={privacy['delta']:g}, {spent} ({where})")
    for budget, figures in (summary.get("certificates") or {}).items():
        lines.append(
            f"certificates: budget {budget}: certified ratio {_shown(figures['certified-ratio'])}, "
            f"certified accuracy {_shown(figures['certified-accuracy'])}, unknown {_shown(figures['unknown-ratio'])}"
        )
    unlearning = summary.get("unlearning")
    if unlearning:
        before, after = unlearning.get("original", {}), unlearning.get("unlearned", {})
        # stamen.unlearn.evaluate's figures (the names "forget_acc" and "test_acc" here never matched: only a class
        # request's figures were shown)
        shown = ("acc_forget", "test_forgotten_class", "test_other_classes", "test_global")
        shared = [k for k in shown if k in after]
        figures = ", ".join(f"{k} {_shown(before.get(k))} -> {_shown(after[k])}" for k in shared)
        lines.append(
            f"unlearning: {unlearning['request']} by {unlearning['method_used']} in {unlearning['seconds']:.1f} s"
            + (f"; {figures}" if figures else "")
        )
    hits = summary.get("hits_at_k") or {}
    if hits.get("not_computable"):
        lines.append(f"Hits@{hits['k']} not computable for {', '.join(hits['not_computable'])}: {hits['reason']}")
    fair = summary.get("fairness")
    if fair:
        label = dict(SUMMARY_FIGURES).get(fair["figure"], fair["figure"])
        lines.append(
            f"{label} per client ({fair['clients']} clients, each on its own test {examples(summary.get('task'))}): "
            f"min {_shown(fair['min'])} (client {fair['worst_client']}), "
            f"mean over clients {_shown(fair['mean'])}, max {_shown(fair['max'])}, std {_shown(fair['std'])}"
        )
    if summary.get("degraded"):
        failed = ", ".join(f"{n} {category}" for category, n in summary["failed_clients"].items() if n)
        lines.append(
            f"DEGRADED: client replies failed during the run ({failed}; see failed_clients in metrics.jsonl): "
            "the figures are not those of the full federation"
        )
    return lines


def torch_state_dict(arrays: ArrayRecord) -> dict:
    """The global weights as a PyTorch state dict.

    Flower converts only when PyTorch is already imported, and the ServerApp starts
    without it (a deployment's ServerApp process never imports it before this point).
    """
    import torch  # noqa: F401

    return arrays.to_torch_state_dict()


def import_torch_behind() -> None:
    """Start importing PyTorch in a thread of its own, for :func:`torch_state_dict` and :func:`save_model` at the end.

    The ServerApp starts without PyTorch (its import, seconds of CPU, would be taken from the
    clients starting beside it) and needed it only once the rounds were over: the run then
    waited for the import before it could write ``model.pt`` (1-2 s of a 20-round run's end
    on a loaded 2-core machine). Called once the first round's replies are in (the clients
    have started), the import runs beside the later rounds, whose server waits on its
    clients most of the time. Python's import lock makes a later ``import torch`` wait for
    this one to finish rather than start another. A process that has PyTorch already (the
    in-process engine) starts nothing.
    """
    if "torch" in sys.modules or any(t.name == _TORCH_IMPORT for t in threading.enumerate()):
        return
    threading.Thread(target=importlib.import_module, args=("torch",), name=_TORCH_IMPORT, daemon=True).start()


_TORCH_IMPORT = "stamen-import-torch"


def save_model(run_dir: Path, state_dict: dict, config: RunConfig) -> None:
    import torch  # only at the end of a run: the ServerApp starts without PyTorch

    spec = {"model": config.model, "hidden": config.hidden, "num_layers": config.num_layers, "task": config.task}
    for key in TASKS[config.task].model_keys:  # what else builds the task's model (a link decoder)
        spec[key.replace("-", "_")] = getattr(config, key.replace("-", "_"))
    buffer = io.BytesIO()
    torch.save({"state_dict": state_dict, "spec": spec}, buffer)
    atomic_write(run_dir / "model.pt", buffer.getvalue())


def privacy_text(config: RunConfig) -> str:
    """The run's differential privacy in a few words: ``no privacy``, ``dp-sgd, noise 1.1``,
    ``client-dp, target epsilon 8``."""
    if config.privacy == "none":
        return "no privacy"
    if config.target_epsilon > 0:
        return f"{config.privacy}, target epsilon {config.target_epsilon:g}"
    return f"{config.privacy}, noise {config.noise_multiplier:g}"


def run_title(name: str, config: RunConfig, clients: int) -> str:
    """A run's figure title: what was trained, on what, with which privacy and seed."""
    return (
        f"{name}: {config.algorithm} / {config.model} on {config.dataset}, {clients} clients, "
        f"{privacy_text(config)}, seed {config.seed}"
    )


def plot_curves(run_dir: Path, rows: list[Row], title: str = "", headline: str = "acc") -> None:
    """``curves.png`` and ``curves.svg``: the headline figure (best validation round marked), training loss per
    round (:mod:`stamen.server.curves`), each written atomically; ``headline``: the task's spec's."""
    figure = curves_figure(rows, title or run_dir.name, headline)
    atomic_write(run_dir / CURVES_PNG, figure_bytes(figure, "png"))
    atomic_write(run_dir / CURVES_FILE, figure_bytes(figure, "svg"))
