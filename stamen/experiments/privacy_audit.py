"""The privacy audit's experiment: one training run with canaries, audited (:func:`audit_run`).

Canaries are planted in each client's training nodes (:func:`stamen.unlearn.privacy_audit.plant_canaries`);
the ClientApp reads the planted copies through its data-source hook (:func:`planted_federation`) while the
federation trains through the real round loop and ClientApp over the in-process grid, with the server's privacy
setup; the final global model's scores on the canaries give an empirical lower bound on epsilon beside the
accountant's. ``stamen audit privacy`` (:mod:`stamen.cli.commands.audit`) runs it for each budget.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch_geometric.data import Data

from stamen.client.data_source import data_source
from stamen.client.job import client_data
from stamen.contract.figures import GLOBAL_TEST_ACC
from stamen.contract.run_config import RunConfig
from stamen.graphs import FederationSpec
from stamen.models import build_model
from stamen.server.driver import build_driver
from stamen.simulations.inprocess import InProcessGrid, flower_log_level, task_identity
from stamen.unlearn.privacy_audit import (
    canary_scores,
    epsilon_lower_bound,
    guess_membership,
    plant_canaries,
)

CPU = torch.device("cpu")


@dataclass(frozen=True)
class AuditResult:
    """One audited run: the accountant's epsilon beside the empirical lower bound (``None``: no DP, no accountant)."""

    privacy: str
    target_epsilon: float | None
    accountant_epsilon: float | None
    lower_bound: float
    canaries: int
    guesses: int
    correct: int
    global_test_acc: float
    seconds: float


@contextlib.contextmanager
def planted_federation(spec: FederationSpec, planted: dict[int, Data]) -> Iterator[list[int]]:
    """While open, the ClientApp reads ``planted[i]`` as partition ``i`` of ``spec``; yields the reads made."""
    reads: list[int] = []

    def read(partition_id: int) -> Data:
        reads.append(partition_id)
        return planted[partition_id]

    with data_source(spec, read):  # the ClientApp's own hook (stamen.client.data_source), nothing patched
        yield reads


def audit_run(
    config: RunConfig, num_clients: int, per_client: int, strength: float, confidence: float, guess_fraction: float
) -> AuditResult:
    """Train ``config`` over ``num_clients`` in-process clients with canaries; audit the final global model."""
    started = time.perf_counter()
    spec = config.federation(num_clients)
    rng = np.random.default_rng(config.seed)
    planted, canaries = {}, {}
    for i in range(num_clients):
        planted[i], canaries[i] = plant_canaries(client_data(spec, i, CPU), per_client, strength, rng)
    torch.manual_seed(config.seed)
    rows: list[dict] = []
    # Flower's per-round INFO lines stay out of the audit's output (its progress lines and table)
    with task_identity(), flower_log_level(logging.WARNING), planted_federation(spec, planted) as reads:
        grid = InProcessGrid(config, num_clients)
        setup = build_driver(config, grid, clients=num_clients)
        arrays = setup.run(rows.append)
    if set(reads) != set(range(num_clients)):
        raise RuntimeError(f"only partitions {sorted(set(reads))} trained on their canaries; the audit is void")
    model = build_model(
        config.model,
        planted[0].num_features,
        int(planted[0].num_classes),
        hidden=config.hidden,
        num_layers=config.num_layers,
        dropout=0.0,
    )
    model.load_state_dict(arrays.to_torch_state_dict())
    scores = np.concatenate([canary_scores(model, planted[i], canaries[i]) for i in range(num_clients)])
    included = np.concatenate([canaries[i].included for i in range(num_clients)])
    k = int(len(scores) * guess_fraction / 2)
    guesses = guess_membership(scores, included, k, k)
    if config.privacy == "dp-sgd":
        accountant: float | None = float(rows[-1]["epsilon_max"])
    elif config.privacy == "client-dp" and setup.epsilon_after is not None:
        accountant = setup.epsilon_after(config.num_server_rounds)
    else:
        accountant = None
    return AuditResult(
        privacy=config.privacy,
        target_epsilon=config.target_epsilon if config.privacy != "none" else None,
        accountant_epsilon=accountant,
        lower_bound=epsilon_lower_bound(guesses, config.target_delta, confidence),
        canaries=guesses.canaries,
        guesses=guesses.guesses,
        correct=guesses.correct,
        global_test_acc=float(rows[-1].get(GLOBAL_TEST_ACC, math.nan)),
        seconds=time.perf_counter() - started,
    )


def table(results: list[AuditResult]) -> str:
    """The results as an aligned text table."""
    header = ("privacy", "budget", "accountant eps", "empirical eps >=", "correct/guesses", "test acc", "seconds")
    lines = [header]
    for r in results:
        lines.append(
            (
                r.privacy,
                "-" if r.target_epsilon is None else f"{r.target_epsilon:g}",
                "inf (no DP)" if r.accountant_epsilon is None else f"{r.accountant_epsilon:.3f}",
                f"{r.lower_bound:.3f}",
                f"{r.correct}/{r.guesses} of {r.canaries}",
                f"{r.global_test_acc:.3f}",
                f"{r.seconds:.1f}",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)) for line in lines)
