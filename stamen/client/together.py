"""A round's training messages answered together: the clients' local training as one batch (in-process engine).

The in-process engine (:mod:`stamen.simulations.inprocess`) holds every client of a round in one
process, so it can hand the ClientApp a round's messages at once. :func:`answer_together`
then gives each message the reply the ClientApp gives it alone, built by the same code
(:func:`stamen.client.handlers.begin_training` and :func:`~stamen.client.handlers.end_training` per
client), except that the clients' local training steps run together
(:func:`stamen.models.together.fit_together`: one pass over their block-diagonal graph, each client
with its own weights, Adam moments and dropout draws: node classification's local step, for a task
whose client part says it is its own, :meth:`stamen.client.tasks.ClientTask.trains_together`), which takes
the same steps to the bit, and the models they receive, and those they train when the run asks for their
figures, are evaluated in one pass too (:func:`stamen.models.together.evaluate_together`).

A message trains together when its client runs FedAvg's own local training (an algorithm
whose ``train`` is marked :func:`stamen.client.algorithms.local_step`: FedAvg's
:meth:`stamen.client.local_step.FedAvgClient.train`, FedProx's proximal term included, no forged
reply; or FedSage's, which is FedAvg's on the graph its frozen generator mended), without
DP-SGD, an unlearning step other than local training (retraining and fine-tuning train
together), secure aggregation or client-side clipping (the ClientApp's
mods would act on it), on a CPU and with a model :func:`stamen.models.together.trains_together`
takes. Every other message gets the ClientApp alone, as before. A client's training time
(its ``client-train-seconds``) is its share of the batch's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from flwr.app import Context, Message, MessageType

from stamen.client.algorithms import ClientAlgorithm, takes_local_step
from stamen.client.clipping import clips_on_client
from stamen.client.handlers import (
    TrainingRound,
    begin_training,
    end_training,
    evaluate_received_model,
    evaluates_trained_model,
    train_begun,
    training_seed,
)
from stamen.client.job import OPTIMIZER_STATE
from stamen.client.local_step import FedAvgClient
from stamen.client.secagg import aggregates_securely
from stamen.client.tasks import client_task
from stamen.contract import protocol as p
from stamen.models.together import (
    ClientBlock,
    Weights,
    computed_graph,
    evaluate_together,
    fit_together,
    trained_module,
    trains_together,
)
from stamen.models.training import Evaluation, adam, one_graph

Handler = Callable[[Message, Context], Message]


def answer_together(messages: Sequence[Message], contexts: Sequence[Context], alone: Handler) -> list[Message]:
    """The replies to ``messages`` (in order), sent to the clients of ``contexts``; ``alone`` answers a
    message that does not train together (the ClientApp itself)."""
    replies: list[Message | None] = [None] * len(messages)
    waiting: dict[tuple, list[tuple[int, TrainingRound, Weights]]] = {}  # by run config and proximal strength
    for i, (message, context) in enumerate(zip(messages, contexts)):
        if not _may_train_together(message, context):
            replies[i] = alone(message, context)
            continue
        work = begin_training(message, context, evaluate=False)
        if _trains_together(work):  # its received weights kept: the next client resets the process's model
            received = {name: w.detach().clone() for name, w in trained_module(work.model).named_parameters()}
            batch = (id(work.job.config), _proximal_mu(work))
            waiting.setdefault(batch, []).append((i, work, received))
        else:
            evaluate_received_model(work)
            replies[i] = train_begun(work)
    for waiting_group in waiting.values():
        waiting_group.sort(key=lambda entry: entry[1].job.partition_id)  # one block per set of clients, any order
        for group in _batches(waiting_group):
            _answer_batch(group, replies)
    return replies  # type: ignore[return-value]


BATCH_NODES = 1 << 18
"""Nodes trained in one batch at most. A batch's activations, gradients and dropout masks grow with its nodes
(about 2 KB a node for the default two-layer GCN, hidden 64: 2 GB at a million nodes, 20 GB at ten million),
so a large federation trains in batches of about a quarter of a million nodes, one after another, each
taking the same steps to the bit as its clients alone; the per-op costs are paid once per batch."""


def _batches(group: list[tuple[int, TrainingRound, Weights]]) -> list[list[tuple[int, TrainingRound, Weights]]]:
    """``group`` cut in order into runs of clients of at most :data:`BATCH_NODES` nodes (a larger client alone)."""
    batches: list[list[tuple[int, TrainingRound, Weights]]] = [[]]
    nodes = 0
    for entry in group:
        size = int(entry[1].job.data.num_nodes)
        if batches[-1] and nodes + size > BATCH_NODES:
            batches.append([])
            nodes = 0
        batches[-1].append(entry)
        nodes += size
    return batches


def _answer_batch(group: list[tuple[int, TrainingRound, Weights]], replies: list[Message | None]) -> None:
    """The replies of one batch of clients that train together (``(message index, work, received weights)``)."""
    works, received = [work for _, work, _ in group], [weights for _, _, weights in group]
    one_model = _one_model(works, received)
    for work, weights, (evaluation, seconds) in zip(
        works, received, _evaluated(works, received, lambda work: work.spec.aggregates, one_model)
    ):
        evaluate_received_model(work if evaluation is not None else _loaded(work, weights), evaluation, seconds)
    if len(group) == 1:
        replies[group[0][0]] = train_begun(_loaded(works[0], received[0]))
        return
    trained, share = _fit(works, received)
    local = _evaluated(works, trained, evaluates_trained_model)
    for (i, work, _), weights, (evaluation, seconds) in zip(group, trained, local):
        work.laps.add(p.TRAIN_SECONDS, share)
        replies[i] = end_training(_loaded(work, weights), evaluation, seconds)


def _evaluated(
    works: list[TrainingRound], weights: list[Weights], wanted: Callable[[TrainingRound], bool], one_model: bool = False
) -> list[tuple[Evaluation | None, float]]:
    """The evaluations of ``weights`` for the clients ``wanted`` picks, with each one's share of the time:
    together where one forward pass serves a client (:func:`stamen.models.training.one_graph`, no new client);
    None for the others, which the handler evaluates alone. ``one_model``: every client holds the same
    weights (the received global model), so its first-layer product runs once over all their rows."""
    found: list[tuple[Evaluation | None, float]] = [(None, 0.0)] * len(works)
    chosen = [
        i for i, work in enumerate(works) if wanted(work) and work.job.new_client is None and one_graph(work.job.data)
    ]
    if len(chosen) > 1:
        started = time.perf_counter()
        own = [weights[chosen[0]]] * len(chosen) if one_model else [weights[i] for i in chosen]
        evaluations = evaluate_together(trained_module(works[chosen[0]].model), own, _block([works[i] for i in chosen]))
        share = (time.perf_counter() - started) / len(chosen)
        for i, evaluation in zip(chosen, evaluations):
            found[i] = (evaluation, share)
    return found


def _one_model(works: list[TrainingRound], received: list[Weights]) -> bool:
    """Whether every client received the same weights: one record loaded as sent (the in-process engine
    hands a round's clients one record), or equal tensors."""
    record = works[0].message.content[p.ARRAYS]
    if all(
        work.message.content[p.ARRAYS] is record
        and type(work.algorithm).new_model is ClientAlgorithm.new_model
        and type(work.algorithm).receive is ClientAlgorithm.receive
        for work in works
    ):
        return True
    return all(all(torch.equal(own[name], received[0][name]) for name in own) for own in received[1:])


def _may_train_together(message: Message, context: Context) -> bool:
    """Whether the ClientApp's mods leave the message to the training handler and that handler trains it."""
    config = context.run_config
    return (
        message.metadata.message_type == MessageType.TRAIN
        and not aggregates_securely(config)
        and not clips_on_client(config)
        and config.get("privacy") != "dp-sgd"
    )


def _block(works: Sequence[TrainingRound]) -> ClientBlock:
    """The clients' subgraphs side by side, each as its model computes on it (FedSage's: mended)."""
    return ClientBlock([work.job.data for work in works], [computed_graph(work.model, work.job.data) for work in works])


def _trains_together(work: TrainingRound) -> bool:
    if work.unlearning:
        from stamen.client.unlearning import trains_locally  # unlearning modules load only when asked

        if not trains_locally(work.round_config):  # LAF, head repair or gradient ascent
            return False
    return (
        takes_local_step(work.algorithm)
        and client_task(work.job.config.task).trains_together()  # the task's local step is the batched one
        and trains_together(work.model, work.job.device)
    )


def _proximal_mu(work: TrainingRound) -> float:
    """FedProx's proximal strength of the client's training (FedSage's: none)."""
    algorithm = work.algorithm
    return algorithm.proximal_mu(work.round_config) if isinstance(algorithm, FedAvgClient) else 0.0


def _loaded(work: TrainingRound, weights: Weights) -> TrainingRound:
    """``work`` with ``weights`` in its model."""
    with torch.no_grad():
        for name, param in trained_module(work.model).named_parameters():
            param.copy_(weights[name])
    return work


def _fit(works: list[TrainingRound], received: list[Weights]) -> tuple[list[Weights], float]:
    """:meth:`FedAvgClient.train` (FedProx's too) for every client of ``works`` at once: each resumes its Adam moments,
    trains from its ``received`` weights with its own dropout draws, and keeps its moments. Returns the
    trained weights and each client's share of the time."""
    started = time.perf_counter()
    config = works[0].job.config
    weights = [{name: w.requires_grad_() for name, w in own.items()} for own in received]
    names = list(weights[0])
    optimizer = adam([w[name] for w in weights for name in names], config.lr, config.weight_decay)
    if config.keep_optimizer_state:
        for work, w in zip(works, weights):
            work.job.resume(optimizer, OPTIMIZER_STATE, [w[name] for name in names])
    generators = [torch.Generator().manual_seed(training_seed(work.job, work.server_round)) for work in works]
    mu = _proximal_mu(works[0])  # the same for the batch (its key)
    model = trained_module(works[0].model)
    losses = fit_together(model, weights, _block(works), config.local_epochs, optimizer, generators, mu)
    for work, w, loss in zip(works, weights, losses):
        work.job.keep_optimizer(optimizer, OPTIMIZER_STATE, [w[name] for name in names])
        work.metrics[p.TRAIN_LOSS] = loss
    trained = [{name: value.detach() for name, value in w.items()} for w in weights]
    return trained, (time.perf_counter() - started) / len(works)
