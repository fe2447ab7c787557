"""An in-process FedAvg loop over the same federation: the speed and accuracy yardstick.

It does what an in-process FGL library does (one Python process, clients trained one
after another, weights averaged in memory) with Stamen's own data, models and local
training, so that the only difference to a ``flwr run`` is Flower's process and
message machinery.
"""

from __future__ import annotations

import resource
import time
from typing import Any

import torch

from client.job import federation_spec
from client.training import evaluate, fit
from graphs import build_federation
from models import build_model
from models.run_config import RunConfig


def in_process_fedavg(config: RunConfig, num_clients: int) -> dict[str, Any]:
    """Run FedAvg for ``config.num_server_rounds`` rounds in this process; return its figures.

    Each round evaluates the global model on every client's validation and test nodes
    (as the Flower app does), so the best round is chosen on validation accuracy.
    """
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    federation = build_federation(federation_spec(config, num_clients))
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

    global_model = new_model()
    local_models = [new_model() for _ in clients]
    optimizers = [
        torch.optim.Adam(m.parameters(), lr=config.lr, weight_decay=config.weight_decay) for m in local_models
    ]
    weights = [int(c.train_mask.sum()) for c in clients]
    history = []
    set_up = time.perf_counter() - started
    for server_round in range(1, config.num_server_rounds + 1):
        round_started = time.perf_counter()
        states = []
        for model, optimizer, data in zip(local_models, optimizers, clients):
            model.load_state_dict(global_model.state_dict())
            fit(model, data, config.local_epochs, optimizer)
            states.append(model.state_dict())
        total = sum(weights)
        global_model.load_state_dict(
            {key: sum(s[key] * w for s, w in zip(states, weights)) / total for key in states[0]}
        )
        evaluations = [evaluate(global_model, data) for data in clients]
        history.append(
            {
                "round": server_round,
                "global_val_acc": sum(e.val_correct for e in evaluations) / sum(e.num_val for e in evaluations),
                "global_test_acc": sum(e.test_correct for e in evaluations) / sum(e.num_test for e in evaluations),
                "seconds": time.perf_counter() - round_started,
            }
        )
    best = max(history, key=lambda row: row["global_val_acc"])
    return {
        "wall_seconds": time.perf_counter() - started,
        "set_up_seconds": set_up,
        "seconds_per_round": sum(r["seconds"] for r in history) / len(history),
        "final_test_acc": history[-1]["global_test_acc"],
        "best_val_round": best["round"],
        "test_acc_at_best_val": best["global_test_acc"],
        "max_test_acc": max(r["global_test_acc"] for r in history),
        "peak_memory_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
    }
