r"""One forgetting request, every method, several seeds: the figures of ``stamen unlearn``.

:func:`run_request` is the pure in-process entry point (``stamen unlearn``, ``stamen
bench`` and the Flower glue call it). For each seed it

1. builds the run's federation (the partition and splits come from ``config.seed`` and
   stay fixed: they *are* the data being forgotten);
2. takes the original model of that seed: given in ``originals`` (e.g. the saved
   ``model.pt`` of a Flower run for the run's own seed), else trained in-process by
   FedAvg with the run's hyperparameters, initialised from the seed;
3. splits the federation by the request (a ``nodes:`` request samples its nodes with the seed);
4. retrains from scratch on the remaining federation (same rounds, hyperparameters
   and seed), then runs each unlearning method on the original model, timing each;
5. evaluates every model with :func:`unlearn.evaluate.evaluate_unlearning`.

Figures are averaged over seeds. Gap closure compares membership-inference AUCs,
:math:`(\mathrm{AUC}_{orig} - \mathrm{AUC}_{m}) / (\mathrm{AUC}_{orig} - \mathrm{AUC}_{retrain})`, from the mean AUCs;
the time ratio is a method's wall time over retraining's (mean of per-seed ratios).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch

from graphs import FederationSpec, build_federation
from models import NodeClassifier
from contract.run_config import RunConfig
from unlearn.baselines import fedavg_train, finetune, gradient_ascent, new_model
from unlearn.evaluate import METRICS, evaluate_unlearning
from unlearn.federaser import UpdateHistory, federaser, train_with_history
from unlearn.laf import LAFConfig, laf, repair_head
from unlearn.requests import ForgetSplit, Request, parse_request, split_federation
from unlearn.wash import WashConfig, wash

METHODS = ("wash", "laf", "laf+r", "laf+ft", "federaser", "finetune", "gradient-ascent")
# methods that replay the recorded training updates, so need the original trained here
NEEDS_HISTORY = ("federaser",)
ROWS = ("original", "retrain", *METHODS)


def parse_methods(text: str) -> list[str]:
    """``all`` or a comma list of :data:`METHODS`."""
    names = [m.strip() for m in str(text).split(",") if m.strip()]
    if names == ["all"]:
        return list(METHODS)
    unknown = [m for m in names if m not in METHODS]
    if unknown or not names:
        raise ValueError(f"unknown method(s) {unknown or text!r}; choose from: all, {', '.join(METHODS)}")
    return list(dict.fromkeys(names))


def parse_seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in str(text).split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, got {text!r}") from None
    if not seeds or min(seeds) < 0:
        raise ValueError(f"--seeds must be non-negative integers, got {text!r}")
    return list(dict.fromkeys(seeds))


def unlearn_with(
    method: str,
    model: NodeClassifier,
    split: ForgetSplit,
    config: RunConfig,
    seed: int,
    info: dict,
    history: UpdateHistory | None = None,
) -> NodeClassifier:
    """Run one method of :data:`METHODS` on a copy of ``model`` (``federaser`` replays ``history`` instead)."""
    if method == "wash":
        options = WashConfig()
        out = wash(model, split, options)
        info.update(options.info)
        return out
    if method in ("laf", "laf+r", "laf+ft"):
        options = LAFConfig()
        out = laf(model, split.original, options, seed=seed)
        info.update({k: v for k, v in options.info.items() if k == "seconds"})
        info["final_extractor_loss"] = options.info["extractor_loss"][-1] if options.info["extractor_loss"] else None
        info["final_alignment_loss"] = options.info["alignment_loss"][-1] if options.info["alignment_loss"] else None
        if method == "laf+r":
            repair_head(out, split.remaining, epochs=5, lr=config.lr)
        if method == "laf+ft":
            out = finetune(out, split.remaining, config, seed)
        return out
    if method == "federaser":
        if history is None:
            raise ValueError("federaser replays the training's recorded client updates; none were given")
        info["calibration_rounds"] = len(history.windows)
        return federaser(history, split, config, seed)
    if method == "finetune":
        return finetune(model, split.remaining, config, seed)
    if method == "gradient-ascent":
        return gradient_ascent(model, split.original, lr=config.lr, steps=5, seed=seed)
    raise ValueError(f"unknown method {method!r}; choose from: {', '.join(METHODS)}")


def run_request(
    config: RunConfig,
    num_clients: int,
    request: str | Request,
    methods: Iterable[str] = METHODS,
    seeds: Iterable[int] = (0,),
    originals: dict[int, dict[str, torch.Tensor]] | None = None,
    progress: Callable[[str], None] | None = None,
    histories: dict[int, UpdateHistory] | None = None,
) -> dict[str, Any]:
    """Run ``request`` with ``methods`` for every seed; return per-seed and mean figures (JSON-ready).

    Args:
        config: the run config (data, model and training hyperparameters).
        num_clients: the run's number of clients.
        request: ``client:i``, ``nodes:i:FRACTION``, ``class:c`` or a :class:`Request`.
        methods: names from :data:`METHODS`.
        seeds: model seeds (initialisation, dropout, node sampling).
        originals: optional state dicts of the original model per seed; models trained here are
            added to it, so a later call with the same dict (another request) reuses them.
        progress: called with a short message before each step.
        histories: the recorded client updates of the originals trained here (``federaser``
            needs them); filled like ``originals``.
    """
    say = progress or (lambda message: None)
    methods = list(methods)
    for method in methods:
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose from: {', '.join(METHODS)}")
    seeds = list(seeds)
    federation = build_federation(FederationSpec.from_run_config(config.to_flower(), num_clients))
    clients = federation.clients
    num_classes = int(clients[0].num_classes)
    if isinstance(request, str):
        request = parse_request(request, num_clients, num_classes)
    originals = originals if originals is not None else {}
    histories = histories if histories is not None else {}
    needs_history = any(m in NEEDS_HISTORY for m in methods)
    for seed in seeds:
        if needs_history and seed in originals and seed not in histories:
            raise ValueError(
                f"federaser replays the clients' recorded training updates, and seed {seed}'s original model "
                "came without them (a saved Flower run keeps none); drop federaser from the methods, "
                "or run it with `stamen bench unlearn`, which trains the originals in-process"
            )
    per_seed = []
    for seed in seeds:
        split = split_federation(clients, request, seed)
        rows: dict[str, dict[str, Any]] = {}
        if seed in originals:
            say(f"seed {seed}: original model (given or trained before)")
            original = new_model(config, clients[0].num_features, num_classes, seed)
            original.load_state_dict(originals[seed])
            original_source = "given"
        else:
            say(f"seed {seed}: training the original model ({config.num_server_rounds} FedAvg rounds)")
            if needs_history:
                original, histories[seed] = train_with_history(clients, config, seed)
            else:
                original = fedavg_train(clients, config, seed)
            original_source = "in-process FedAvg"
            originals[seed] = {k: v.detach().clone() for k, v in original.state_dict().items()}
        original.eval()
        rows["original"] = {**evaluate_unlearning(original, split), "seconds": None, "source": original_source}
        say(f"seed {seed}: retraining from scratch without {request}")
        started = time.perf_counter()
        retrained = fedavg_train(split.remaining, config, seed)
        retrain_seconds = time.perf_counter() - started
        rows["retrain"] = {**evaluate_unlearning(retrained, split), "seconds": retrain_seconds}
        for method in methods:
            say(f"seed {seed}: {method}")
            info: dict[str, Any] = {}
            started = time.perf_counter()
            model = unlearn_with(method, original, split, config, seed, info, histories.get(seed))
            seconds = time.perf_counter() - started
            rows[method] = {**evaluate_unlearning(model, split), "seconds": seconds, "info": info}
        for row in rows.values():
            row["time_ratio"] = row["seconds"] / retrain_seconds if row.get("seconds") is not None else None
        per_seed.append(
            {
                "seed": seed,
                "num_forget": int(split.forget_ids.numel()),
                "num_remaining_clients": len(split.remaining),
                "rows": rows,
            }
        )
    names = ["original", "retrain", *methods]
    mean = {name: _mean_row([s["rows"][name] for s in per_seed]) for name in names}
    std = {name: _std_row([s["rows"][name] for s in per_seed]) for name in names}
    for name in names:
        mean[name]["gap_closure"] = gap_closure(
            mean["original"]["mia_auc"], mean[name]["mia_auc"], mean["retrain"]["mia_auc"]
        )
    gap = mia_gap(per_seed)
    return {
        "request": str(request),
        "slug": request.slug,
        "kind": request.kind,
        "dataset": config.dataset,
        "model": config.model,
        "partitioner": config.partitioner,
        "num_clients": num_clients,
        "rounds": config.num_server_rounds,
        "seeds": seeds,
        "methods": names,
        "num_forget": per_seed[0]["num_forget"],
        "mean": mean,
        "std": std,
        "per_seed": per_seed,
        "mia_gap": gap,
        "targets": check_targets(request.kind, mean, methods, gap),
    }


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


def _mean_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in (*METRICS, "seconds", "time_ratio"):
        values = [r.get(key) for r in rows if r.get(key) is not None]
        out[key] = statistics.fmean(values) if values else None
    return out


def _std_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
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
    """The issue's targets, per method where they apply: value, threshold, met.

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
        budget = {"wash": 0.01, "laf": 0.2, "laf+r": 0.2, "laf+ft": 0.2, "federaser": 0.2}.get(method)
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
