"""A round's clients trained together reply what each replies alone, to the bit (stamen/client/together.py)."""

from __future__ import annotations

import pytest
import torch

from stamen.client import together as together_module
from stamen.client.job import OPTIMIZER_STATE, private_tensors
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.models.together import evaluate_together, fit_together
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import run_rounds
from stamen.server.unlearning import unlearn_federation
from stamen.simulations.inprocess import InProcessGrid, run_in_process, task_identity

BASE = {"dataset": "csbm", "csbm-nodes": 300, "num-server-rounds": 3, "seed": 4}


def _run(together: bool, clients: int, **values) -> tuple[list[dict], list]:
    rows: list[dict] = []
    grid = run_in_process(RunConfig.from_flower({**BASE, **values}), clients, rows.append, together=together)
    # timings and the answering processes' peak memories are measurements of the machine, not figures
    figures = [{k: v for k, v in row.items() if "seconds" not in k and k != "client_processes"} for row in rows]
    return figures, [context.state for context in grid.contexts.values()]


@pytest.mark.parametrize(
    ("values", "batched"),  # the clients trained together per round
    [
        ({}, [4, 4, 4]),
        ({"model": "sage", "local-eval": True}, [4, 4, 4]),
        ({"model": "mlp", "keep-optimizer-state": False, "local-epochs": 2}, [4, 4, 4]),
        ({"fraction-train": 0.5, "min-clients": 2}, [2, 2, 2]),
        ({"attack": "label-flip", "malicious-clients": "1"}, [4, 4, 4]),  # poisoned labels: still together
        ({"attack": "sign-flip", "malicious-clients": "1"}, [3, 3, 3]),  # a forged reply: that client alone
        ({"algorithm": "fedprox", "proximal-mu": 0.1}, [4, 4, 4]),  # FedAvg's training with its proximal term
        ({"algorithm": "ditto"}, []),  # an algorithm's own training: every client alone
        ({"algorithm": "fedsage+", "fedsage-gen-rounds": 2}, [4, 4, 4]),  # mended graphs; generator steps between
        ({"algorithm": "fedsage-local", "model": "sage", "fedsage-gen-epochs": 3, "local-eval": False}, [4, 4, 4]),
        ({"model": "gat"}, []),
        ({"missing-classes": 1}, [4, 4, 4]),  # masks of the settings, one graph: evaluated together too
        ({"unseen-node-frac": 0.2}, [4, 4, 4]),  # the whole subgraph differs: evaluated alone
        ({"new-client": True}, [4, 4, 4]),  # evaluated on the new client too: alone
    ],
)
def test_together_replies_as_alone(values, batched, monkeypatch):
    sizes, evaluated = [], []

    def counted(model, weights, *args):
        sizes.append(len(weights))
        return fit_together(model, weights, *args)

    def evaluations(model, weights, block):
        evaluated.append(len(weights))
        return evaluate_together(model, weights, block)

    monkeypatch.setattr(together_module, "fit_together", counted)
    monkeypatch.setattr(together_module, "evaluate_together", evaluations)
    together, states = _run(True, 4, **values)
    assert sizes == batched
    one_pass = "unseen-node-frac" not in values and "new-client" not in values  # else each client alone
    per_round = one_pass * (1 + values.get("local-eval", True))  # the received model, and the trained ones
    assert evaluated == [size for size in batched for _ in range(per_round)]
    alone, alone_states = _run(False, 4, **values)
    assert together == alone
    assert len(together) == BASE["num-server-rounds"] + 1
    for ours, theirs in zip(states, alone_states):  # each client's Adam moments, kept for the next round
        assert (OPTIMIZER_STATE in ours) == (OPTIMIZER_STATE in theirs)
        if OPTIMIZER_STATE in ours:
            mine, yours = private_tensors(ours[OPTIMIZER_STATE]), private_tensors(theirs[OPTIMIZER_STATE])
            assert mine.keys() == yours.keys() and all(torch.equal(mine[k], yours[k]) for k in mine)


def test_a_round_larger_than_a_batch_trains_in_batches_as_alone(monkeypatch):
    """Clients beyond BATCH_NODES nodes train in several batches, one after another: the same replies."""
    sizes = []

    def counted(model, weights, *args):
        sizes.append(len(weights))
        return fit_together(model, weights, *args)

    monkeypatch.setattr(together_module, "fit_together", counted)
    monkeypatch.setattr(together_module, "BATCH_NODES", 175)  # clients of 86, 45, 85, 84 nodes: batches of two
    batched, states = _run(True, 4)
    assert sizes == [2, 2] * BASE["num-server-rounds"]
    alone, alone_states = _run(False, 4)
    assert batched == alone
    for ours, theirs in zip(states, alone_states):
        mine, yours = private_tensors(ours[OPTIMIZER_STATE]), private_tensors(theirs[OPTIMIZER_STATE])
        assert mine.keys() == yours.keys() and all(torch.equal(mine[k], yours[k]) for k in mine)


@pytest.mark.parametrize("method", ["finetune", "retrain", "laf+ft"])
def test_unlearning_rounds_train_together_as_alone(method, tmp_path, monkeypatch):
    """Retraining and fine-tuning rounds (local training on the remaining subgraphs) train together;
    LAF's own rounds go alone; the unlearned model and its figures are the same."""
    values = {**BASE, "unlearn-request": "nodes:0:0.5", "unlearn-method": method, "min-clients": 2, "local-eval": False}
    config = RunConfig.from_flower(values)
    module = server_algorithm("fedavg")
    sizes = []

    def counted(model, weights, *args):
        sizes.append(len(weights))
        return fit_together(model, weights, *args)

    monkeypatch.setattr(together_module, "fit_together", counted)
    outcomes = []
    for together in (True, False):
        grid = InProcessGrid(config, 3, together=together)
        (tmp_path / str(together)).mkdir()
        phases: dict[str, set[bool]] = {}  # unlearning flag -> whether its replies carried the trained model's figures
        send = grid.send_and_receive

        def recording(messages, *, timeout=None, send=send, phases=phases):
            messages = list(messages)
            replies = send(messages, timeout=timeout)
            for message, reply in zip(messages, replies):
                config = message.content[p.CONFIG] if p.CONFIG in message.content else {}
                for flag in (key for key in p.UNLEARN_TRAIN_KEYS if key in config):
                    phases.setdefault(flag, set()).add(p.LOCAL_VAL_CORRECT in reply.content[p.METRICS])
            return replies

        grid.send_and_receive = recording
        with task_identity():
            arrays = run_rounds(
                grid, module.make_strategy(config), config.num_server_rounds, True, 2, 60.0, lambda row: None
            )
            trained = len(sizes)
            result, unlearned = unlearn_federation(
                grid, config, arrays, module.make_strategy, True, tmp_path / str(together), 1.0
            )
        # local-eval=false: local training rounds reply the received model's figures only, LAF's its own
        assert phases == {p.UNLEARN_RETRAIN: {False}, **({p.UNLEARN_LAF: {True}} if method == "laf+ft" else {})}
        figures = {k: v for k, v in result.as_dict().items() if "seconds" not in k}
        outcomes.append((figures, unlearned.to_torch_state_dict()))
        if together:
            assert len(sizes) > trained  # the unlearning rounds trained together too
    (ours, our_weights), (theirs, their_weights) = outcomes
    assert _without_times(ours) == _without_times(theirs)
    assert all(torch.equal(our_weights[k], their_weights[k]) for k in their_weights)


def _without_times(value):
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if "seconds" not in k and "time" not in k}
    return value


def test_the_parts_marked_as_fedavgs_local_step_are_those_whose_train_is_fedavgs_or_fedsages():
    """The in-process engine batches a client whose ``train`` is FedAvg's own (FedProx's term included) or FedSage's
    (FedAvg's on the mended graph): the mark finds exactly those, inherited or not, and no override of them."""
    from stamen.algorithms.fedsage.client import FedSageClient
    from stamen.client.algorithms import client_algorithm, takes_local_step
    from stamen.client.local_step import FedAvgClient
    from stamen.contract.algorithms import ALGORITHMS

    parts = {name: client_algorithm(name)[1] for name in ALGORITHMS}
    marked = {name for name, part in parts.items() if takes_local_step(part)}
    fedavgs = {name for name, part in parts.items() if type(part).train in (FedAvgClient.train, FedSageClient.train)}
    assert marked == fedavgs
    assert {"fedavg", "fedprox", "fedsage-local", "fedsage+", "fedadam"} <= marked
    assert not marked & {"local", "ditto", "fedlog", "fedpub", "fedproto", "fedrep"}
