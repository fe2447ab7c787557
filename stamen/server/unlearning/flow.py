"""One unlearning request on a trained federation: roll call, method (or fallback), figures.

:func:`forget` is the flow both the Flower run (:func:`unlearn_federation`, after the last
round) and the in-process experiment (:mod:`stamen.experiments.unlearn_experiment`) drive:

1. the roll call (:func:`stamen.server.unlearning.rollcall.roll_call`) evaluates the trained weights
   on every client; who answers takes part;
2. if a client that holds data to forget did not answer and the method needs the holders
   (``needs_holders``), the server retrains from scratch instead, with the same rounds and
   strategy, on the clients that answered, each without its forgotten nodes, and says so
   in the log and the result;
3. the method (:data:`stamen.server.unlearning.registry.METHODS`) runs.

:func:`unlearn_federation` then evaluates the unlearned weights on the clients that answered
and writes ``unlearn.json`` and ``unlearn.md`` (:mod:`stamen.server.unlearning.results`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from logging import INFO, WARNING
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flwr.app import ArrayRecord
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from stamen.contract.requests import Request, parse_request
from stamen.contract.run_config import RunConfig
from stamen.server.loop import RunHealth
from stamen.server.unlearning.base import UnlearningJob
from stamen.server.unlearning.evaluation import evaluate_federated, pooled_figures
from stamen.server.unlearning.registry import RETRAIN, unlearning_method
from stamen.server.unlearning.results import UnlearningResult, write_results
from stamen.server.unlearning.rollcall import RollCall, roll_call

if TYPE_CHECKING:
    from stamen.unlearn.federaser import UpdateHistory


@dataclass
class Forgetting:
    """What :func:`forget` did.

    Attributes:
        arrays: the unlearned weights.
        method_used: the method that ran.
        info: its figures, by phase.
        seconds: wall time of roll call and method.
        roll: who answered the roll call (and the trained model's counts).
        fallback: why retraining replaced the method, or None.
        health: the client failures of the method's rounds and queries (the roll call's are in ``roll``).
    """

    arrays: ArrayRecord
    method_used: str
    info: dict[str, dict[str, Any]]
    seconds: float
    roll: RollCall
    fallback: str | None = None
    health: RunHealth | None = None


def forget(
    grid: Grid,
    config: RunConfig,
    request: Request,
    arrays: ArrayRecord,
    strategy_factory: Callable[[RunConfig], Strategy],
    aggregates: bool,
    method_name: str,
    history: UpdateHistory | None = None,
    initial: ArrayRecord | None = None,
) -> Forgetting:
    """Forget ``request`` from the trained ``arrays`` with ``method_name`` (see the module docstring)."""
    method = unlearning_method(method_name)
    if len(arrays) == 0:
        raise RuntimeError(f"unlearn-request needs a global model; algorithm {config.algorithm!r} does not aggregate")
    started = time.perf_counter()
    roll = roll_call(grid, request, arrays, config.round_timeout)
    fallback = None
    if roll.missing and method.needs_holders:
        log(
            WARNING,
            "unlearning: client(s) %s hold data to forget and did not answer; falling back to retraining "
            "from scratch on the %d clients that did",
            roll.missing,
            len(roll.partitions),
        )
        fallback = f"client(s) {roll.missing} did not answer: retrained on the other clients"
        method = unlearning_method(RETRAIN)
    elif roll.missing:
        log(WARNING, "unlearning: client(s) %s did not answer; %s goes on without them", roll.missing, method.name)
    job = UnlearningJob(grid, config, request, arrays, strategy_factory, aggregates, roll.partitions, history, initial)
    result = method.run(job)
    seconds = time.perf_counter() - started
    return Forgetting(result.arrays, method.name, result.info, seconds, roll, fallback, job.health)


def unlearn_federation(
    grid: Grid,
    config: RunConfig,
    arrays: ArrayRecord,
    strategy_factory: Callable[[RunConfig], Strategy],
    aggregates: bool,
    run_dir: Path,
    training_seconds: float,
    history: UpdateHistory | None = None,
) -> tuple[UnlearningResult, ArrayRecord]:
    """Forget ``config.unlearn_request`` with ``config.unlearn_method`` after a Flower run; write the
    results into ``run_dir`` and return them with the unlearned weights."""
    if len(arrays) == 0:
        raise RuntimeError(f"unlearn-request needs a global model; algorithm {config.algorithm!r} does not aggregate")
    node_ids = list(grid.get_node_ids())
    num_classes = int(arrays["head.weight"].shape[0]) if "head.weight" in arrays else None
    try:
        request = parse_request(config.unlearn_request, len(node_ids), num_classes)
    except ValueError as error:
        raise RuntimeError(str(error)) from None
    log(INFO, "stamen: unlearning %s (%s) on %d clients", request, config.unlearn_method, len(node_ids))
    done = forget(grid, config, request, arrays, strategy_factory, aggregates, config.unlearn_method, history)
    answering = list(done.roll.partitions)
    result = UnlearningResult(
        request=str(request),
        method=config.unlearn_method,
        method_used=done.method_used,
        clients=len(node_ids),
        seconds=done.seconds,
        training_seconds=training_seconds,
        original=pooled_figures(done.roll.counts, request),
        unlearned=evaluate_federated(grid, request, done.arrays, answering, config.round_timeout, config.min_clients),
        evaluated_clients=sorted(done.roll.partitions.values()),
        info=done.info,
        fallback=done.fallback,
    )
    table = write_results(run_dir, result)
    log(INFO, "stamen: unlearning %s by %s in %.2f s\n%s", request, result.method_used, result.seconds, table)
    return result, done.arrays
