r"""One forgetting request, every method, several seeds: the figures of ``stamen unlearn``.

Every model here is trained by the app's own engine: the round loop
(:func:`stamen.server.loop.run_rounds`) with the real ClientApp over an in-process grid
(:class:`stamen.simulations.inprocess.InProcessGrid`), and every method runs the server's
unlearning flow (:func:`stamen.server.unlearning.forget`) exactly as a Flower run with
``unlearn-request`` does. What this adds is the experiment: several seeds, retraining as
a yardstick, and figures that need all the data in one place (the membership-inference AUC).

For each seed :func:`run_request`

1. builds the run's federation (the partition, the splits and the nodes a ``nodes:``
   request picks come from ``config.seed`` and stay fixed: they *are* the data being forgotten);
2. takes the original model of that seed: given in ``originals`` (e.g. the saved
   ``model.pt`` of a Flower run for the run's own seed), else trained with the run's
   algorithm and config from the seed's initial weights (the seed sets the initialisation);
3. retrains from scratch (the ``retrain`` method: same rounds, algorithm and initial weights,
   on the remaining federation), then runs each method on the original model, timing each
   (roll call included, as in a Flower run), each on a fresh grid so no method sees another's
   client state;
4. evaluates every model with :func:`stamen.unlearn.evaluate.evaluate_unlearning`.

Means, spreads and targets: :mod:`stamen.experiments.unlearn_targets`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import Any

import torch
from flwr.app import ArrayRecord

from stamen.contract.requests import Request, parse_request
from stamen.contract.run_config import RunConfig
from stamen.experiments.unlearn_targets import check_targets, gap_closure, mean_row, mia_gap, std_row
from stamen.graphs import build_federation
from stamen.models import NodeClassifier, build_model
from stamen.server.algorithms import server_algorithm
from stamen.server.driver import build_driver
from stamen.server.loop import RunHealth, seed_server_draws
from stamen.server.unlearning import METHODS as REGISTRY
from stamen.server.unlearning import RETRAIN, Forgetting, forget
from stamen.simulations.inprocess import InProcessGrid, flower_log_level, task_identity
from stamen.unlearn.evaluate import evaluate_unlearning
from stamen.unlearn.federaser import UpdateHistory
from stamen.unlearn.requests import ForgetSplit, split_federation

METHODS = tuple(name for name in REGISTRY if name != RETRAIN)
# methods that replay the recorded training updates, so need the original trained here
NEEDS_HISTORY = tuple(name for name in METHODS if REGISTRY[name].needs_history)
ROWS = ("original", RETRAIN, *METHODS)
State = dict[str, torch.Tensor]


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


def new_model(config: RunConfig, in_dim: int, num_classes: int, seed: int) -> NodeClassifier:
    """The run's architecture with the initial weights of ``seed`` (those the clients build for it)."""
    torch.manual_seed(seed)
    return build_model(
        config.model, in_dim, num_classes, hidden=config.hidden, num_layers=config.num_layers, dropout=config.dropout
    )


def check_algorithm(name: str) -> None:
    """The experiment needs a global model of the run's architecture: an aggregating algorithm
    whose clients train the plain node classifier, the spec's ``unlearnable`` as for a run's
    ``unlearn-request`` (ValueError naming the problem otherwise)."""
    spec = server_algorithm(name).spec
    if not spec.aggregates:
        raise ValueError(f"algorithm {name!r} keeps no global model, so there is nothing to unlearn from")
    if not spec.unlearnable:
        raise ValueError(
            f"algorithm {name!r} trains its own model type; the unlearning methods edit the run's node "
            "classifier (use fedavg or fedprox)"
        )


def train_original(
    config: RunConfig, num_clients: int, initial: State, history: UpdateHistory | None = None
) -> ArrayRecord:
    """The run's training from ``initial`` on a fresh in-process grid: the app's rounds and ClientApp.

    ``history``, when given, records every client's update (as a Flower run does for ``federaser``).
    """
    health = RunHealth()
    with task_identity():
        driver = build_driver(config, InProcessGrid(config, num_clients), clients=num_clients)
        arrays = driver.run(lambda row: None, initial=ArrayRecord(initial), history=history, health=health)
    _require_everyone(health, "training the original model")
    return arrays


def _require_everyone(health: RunHealth | None, what: str) -> None:
    """In-process no client may fail: figures from fewer clients than asked would be reported as if whole."""
    if health is not None and health.failures:
        first = health.failures[0]
        raise RuntimeError(
            f"{what}: {len(health.failures)} client replies failed in-process, first {first.name()} "
            f"({first.category.value}: {first.reason})"
        )


def forget_in_process(
    config: RunConfig,
    num_clients: int,
    request: Request,
    arrays: ArrayRecord,
    method: str,
    history: UpdateHistory | None = None,
    initial: ArrayRecord | None = None,
) -> Forgetting:
    """The server's unlearning flow (:func:`stamen.server.unlearning.forget`) on a fresh in-process grid.

    In-process nobody fails, so min-clients is lowered to the clients that stay where fewer stay.
    """
    staying = num_clients - (1 if request.leaving() is not None else 0)
    config = dataclasses.replace(config, min_clients=min(config.min_clients, staying))
    algorithm = server_algorithm(config.algorithm)
    seed_server_draws(config.seed)
    with task_identity():
        done = forget(
            InProcessGrid(config, num_clients),
            config,
            request,
            arrays,
            algorithm.make_strategy,
            algorithm.AGGREGATES,
            method,
            history=history,
            initial=initial,
        )
    if done.roll.missing or len(done.roll.partitions) != num_clients:
        raise RuntimeError(f"{method}: not every in-process client answered the roll call")
    _require_everyone(done.health, method)
    return done


def _model_of(config: RunConfig, split: ForgetSplit, state: State) -> NodeClassifier:
    model = new_model(config, split.original[0].num_features, split.num_classes, config.seed)
    model.load_state_dict(state)
    model.eval()
    return model


def run_request(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """See :func:`_run_request`; Flower's per-round INFO lines stay out of the way (warnings still show)."""
    with flower_log_level(logging.WARNING):
        return _run_request(*args, **kwargs)


def _run_request(
    config: RunConfig,
    num_clients: int,
    request: str | Request,
    methods: Iterable[str] = METHODS,
    seeds: Iterable[int] = (0,),
    originals: dict[int, State] | None = None,
    progress: Callable[[str], None] | None = None,
    histories: dict[int, UpdateHistory] | None = None,
) -> dict[str, Any]:
    """Run ``request`` with ``methods`` for every seed; return per-seed and mean figures (JSON-ready).

    Args:
        config: the run config (data, algorithm, model and training hyperparameters).
        num_clients: the run's number of clients.
        request: ``client:i``, ``nodes:i:FRACTION``, ``class:c`` or a :class:`Request`.
        methods: names from :data:`METHODS`.
        seeds: model seeds (initialisation).
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
    check_algorithm(config.algorithm)
    federation = build_federation(config.federation(num_clients))
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
    split = split_federation(clients, request, config.seed)  # what the clients compute from the request
    per_seed = []
    for seed in seeds:
        rows: dict[str, dict[str, Any]] = {}
        initial = new_model(config, clients[0].num_features, num_classes, seed).state_dict()
        if seed in originals:
            say(f"seed {seed}: original model (given or trained before)")
            original_source = "given"
        else:
            say(f"seed {seed}: training the original model ({config.num_server_rounds} {config.algorithm} rounds)")
            history = UpdateHistory({k: v.clone() for k, v in initial.items()}) if needs_history else None
            trained = train_original(config, num_clients, initial, history)
            originals[seed] = {k: v.detach().clone() for k, v in trained.to_torch_state_dict().items()}
            if history is not None:
                histories[seed] = history
            original_source = "trained in-process"
        arrays = ArrayRecord({k: v.detach().clone() for k, v in originals[seed].items()})
        rows["original"] = {
            **evaluate_unlearning(_model_of(config, split, originals[seed]), split),
            "seconds": None,
            "source": original_source,
        }
        say(f"seed {seed}: retraining from scratch without {request}")
        retrained = forget_in_process(config, num_clients, request, arrays, RETRAIN, initial=ArrayRecord(initial))
        retrain_seconds = retrained.seconds
        rows[RETRAIN] = {
            **evaluate_unlearning(_model_of(config, split, retrained.arrays.to_torch_state_dict()), split),
            "seconds": retrain_seconds,
        }
        for method in methods:
            say(f"seed {seed}: {method}")
            done = forget_in_process(config, num_clients, request, arrays, method, histories.get(seed))
            model = _model_of(config, split, done.arrays.to_torch_state_dict())
            info = done.info.get(method, done.info)
            rows[method] = {**evaluate_unlearning(model, split), "seconds": done.seconds, "info": info}
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
    return summarize(config, num_clients, request, methods, seeds, per_seed)


def summarize(
    config: RunConfig,
    num_clients: int,
    request: Request,
    methods: list[str],
    seeds: list[int],
    per_seed: list[dict[str, Any]],
) -> dict[str, Any]:
    """The JSON-ready result: per-seed rows, their means and spreads, the MIA gap and the targets."""
    names = ["original", RETRAIN, *methods]
    mean = {name: mean_row([s["rows"][name] for s in per_seed]) for name in names}
    std = {name: std_row([s["rows"][name] for s in per_seed]) for name in names}
    for name in names:
        mean[name]["gap_closure"] = gap_closure(
            mean["original"]["mia_auc"], mean[name]["mia_auc"], mean[RETRAIN]["mia_auc"]
        )
    gap = mia_gap(per_seed)
    return {
        "request": str(request),
        "slug": request.slug,
        "kind": request.kind,
        "dataset": config.dataset,
        "model": config.model,
        "algorithm": config.algorithm,
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
