"""A plain PyTorch FedAvg loop over the same federation: ``stamen bench sim``'s yardstick, nothing else.

It does what an in-process FGL library does (one Python process, clients trained one
after another, weights averaged in memory) with Stamen's own data, models and local
training, so that the only difference to a ``flwr run`` is Flower's process and
message machinery. It is a yardstick only: the speed bench compares Stamen against it,
and no figure Stamen reports comes from it (Stamen's one federated engine is the app's
round loop and ClientApp, :mod:`stamen.server.loop`, in-process through
:mod:`stamen.simulations.inprocess`).
"""

from __future__ import annotations

import copy
import resource
import time
from collections.abc import Callable
from typing import Any

import torch

from stamen.contract.figures import FINAL_TEST_ACC, GLOBAL_TEST_ACC, GLOBAL_VAL_ACC, TEST_ACC_AT_BEST_VAL
from stamen.contract.run_config import RunConfig
from stamen.graphs import build_federation
from stamen.models import build_model
from stamen.models.training import adam, evaluate, fit

State = dict[str, torch.Tensor]


def fedavg_loop(
    model: torch.nn.Module,
    clients: list,
    rounds: int,
    local_epochs: int,
    lr: float,
    weight_decay: float,
    on_round: Callable[[int, torch.nn.Module], None],
) -> None:
    """``rounds`` rounds of FedAvg on ``model`` (in place): each client, with its own model copy and
    Adam moments kept across rounds, trains ``local_epochs`` from the global weights; the global
    weights become the average weighted by training nodes. ``on_round(r, model)`` after each round."""
    weights = [int(c.train_mask.sum()) for c in clients]
    if sum(weights) == 0:
        raise ValueError("no training nodes to train on")
    local = [copy.deepcopy(model) for _ in clients]
    optimizers = [adam(m.parameters(), lr, weight_decay) for m in local]
    for server_round in range(1, rounds + 1):
        state = model.state_dict()
        states = []
        for client_model, optimizer, data, weight in zip(local, optimizers, clients, weights):
            client_model.load_state_dict(state)
            if weight:
                fit(client_model, data, local_epochs, optimizer)
            states.append(client_model.state_dict())
        total = sum(weights)
        model.load_state_dict({key: sum(s[key] * w for s, w in zip(states, weights)) / total for key in state})
        on_round(server_round, model)
    model.eval()


def in_process_fedavg(config: RunConfig, num_clients: int) -> dict[str, Any]:
    """Run FedAvg for ``config.num_server_rounds`` rounds in this process; return its figures.

    Each round evaluates the global model on every client's validation and test nodes
    (as the Flower app does), so the best round is chosen on validation accuracy.
    """
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    federation = build_federation(config.federation(num_clients))
    clients = federation.clients

    def new_model() -> torch.nn.Module:
        torch.manual_seed(config.seed)
        return build_model(
            config.model,
            clients[0].num_features,
            int(clients[0].num_classes),
            hidden=config.hidden,
            num_layers=config.num_layers,
            dropout=config.dropout,
        )

    history = []

    def record(server_round: int, model: torch.nn.Module) -> None:
        evaluations = [evaluate(model, data) for data in clients]
        now = time.perf_counter()
        history.append(
            {
                "round": server_round,
                GLOBAL_VAL_ACC: sum(e.val_correct for e in evaluations) / sum(e.num_val for e in evaluations),
                GLOBAL_TEST_ACC: sum(e.test_correct for e in evaluations) / sum(e.num_test for e in evaluations),
                "seconds": now - (history[-1]["ended"] if history else loop_started),
                "ended": now,
            }
        )

    set_up = time.perf_counter() - started
    loop_started = time.perf_counter()
    fedavg_loop(
        new_model(), clients, config.num_server_rounds, config.local_epochs, config.lr, config.weight_decay, record
    )
    best = max(history, key=lambda row: row[GLOBAL_VAL_ACC])
    return {
        "wall_seconds": time.perf_counter() - started,
        "set_up_seconds": set_up,
        "seconds_per_round": sum(r["seconds"] for r in history) / len(history),
        FINAL_TEST_ACC: history[-1][GLOBAL_TEST_ACC],
        "best_val_round": best["round"],
        TEST_ACC_AT_BEST_VAL: best[GLOBAL_TEST_ACC],
        "max_test_acc": max(r[GLOBAL_TEST_ACC] for r in history),
        "peak_memory_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
    }
