"""The ClientApp's handlers (:mod:`stamen.client.app`): Flower glue around :mod:`stamen.models.training`, plug-ins.

``train`` evaluates the model it received (the previous round's global model) on
its validation and test nodes, trains locally with the run's algorithm, evaluates
again, and replies with the weights and counts. Folding the global evaluation into
the training reply saves a message round per federated round; ``evaluate`` serves
the one evaluation left after the last round.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from typing import Any

import torch
from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Context,
    Message,
    MetricRecord,
    RecordDict,
)

from stamen.client.algorithms import ClientAlgorithm, client_algorithm
from stamen.client.attacks import attacked
from stamen.client.certification import certify_local
from stamen.client.data_source import data_is_given, partition_data
from stamen.client.device import choose_device, pin_threads, seed_device
from stamen.client.identity import check_head, peak_rss_mb, where_name
from stamen.client.job import LocalJob, new_client_data
from stamen.client.privacy import train_round
from stamen.client.tasks import client_task
from stamen.client.weights import weights_record
from stamen.contract import protocol as p
from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.run_config import RunConfig
from stamen.graphs import FederationSpec
from stamen.models.training import Evaluation


def _job(context: Context, head: ConfigRecord | None = None) -> LocalJob:
    """The client's job for a message; ``head``: a training message's config, checked first (see
    :func:`stamen.client.identity.check_head`: the head's Stamen, this node's data root and partition)."""
    node = context.node_config
    config, spec, device = _setting(
        tuple(sorted(context.run_config.items())),
        int(node["num-partitions"]),
        str(node["device"]) if "device" in node else None,
        str(node["data-root"]) if "data-root" in node else None,
    )
    partition_id = int(node["partition-id"])
    if head is not None:
        check_head(head, spec, exported=data_is_given(spec))
    data = partition_data(spec, partition_id, device)
    return LocalJob(config, partition_id, data, device, context.state, new_client_data(spec, device), spec)


@functools.lru_cache(maxsize=16)
def _setting(
    run_config: tuple[tuple[str, Any], ...], num_partitions: int, device: str | None, data_root: str | None
) -> tuple[RunConfig, FederationSpec, torch.device]:
    """The checked run config, the federation and the device of a node, once per process and run.

    A process serves message after message of the same run; checking its ~90 keys each
    time was a tenth of a small client's handler. Both results are immutable.
    """
    config = RunConfig.from_flower(dict(run_config))
    chosen = choose_device(device if device is not None else config.device)
    # a deployment's host names its own data root
    return config, config.federation(num_partitions, data_root), chosen


def _received_model(job: LocalJob, algorithm: ClientAlgorithm, message: Message) -> torch.nn.Module:
    """The model the server sent, built and loaded by the algorithm's hooks (see :mod:`stamen.client.algorithms`)."""
    model = algorithm.new_model(job)
    algorithm.receive(model, job, message.content)
    return model


GLOBAL_KEYS = (p.GLOBAL_VAL_CORRECT, p.GLOBAL_TEST_CORRECT)
LOCAL_KEYS = (p.LOCAL_VAL_CORRECT, p.LOCAL_TEST_CORRECT)


def evaluation_counts(evaluation: Evaluation, which: str) -> dict[str, int]:
    """A node classifier's :class:`Evaluation` as METRICS counts of ``which`` model (``global`` or ``local``)."""
    val, test = GLOBAL_KEYS if which == "global" else LOCAL_KEYS
    counts = {val: evaluation.val_correct, test: evaluation.test_correct}
    counts.update({p.setting_key(which, name): correct for name, (correct, _) in evaluation.settings.items()})
    return counts


def _counts(evaluation: Evaluation, keys: tuple[str, str]) -> dict[str, int]:
    return evaluation_counts(evaluation, keys[0].split("-", 1)[0])


def _figures(model: torch.nn.Module, job: LocalJob, keys: tuple[str, str]) -> dict:
    """``model``'s figures on the client's data as METRICS entries of the model ``keys`` name: the
    run's task's client part's (stamen/client/tasks.py)."""
    return client_task(job.config.task).figures(model, job, keys[0].split("-", 1)[0])


def _reply(message: Message, job: LocalJob, records: dict[str, ArrayRecord], metrics: dict) -> Message:
    if job.config.privacy == "client-dp":
        metrics[p.UNIT_WEIGHT] = 1
    metrics[p.PARTITION_ID] = job.partition_id
    metrics.update(client_task(job.config.task).sizes(job))
    if hasattr(job.data, "unseen_mask"):
        metrics[p.setting_key("num", "unseen-node")] = int(job.data.unseen_mask.sum())
        metrics[p.setting_key("num", "missing-class")] = int(job.data.missing_mask.sum())
    if job.new_client is not None:
        metrics[p.setting_key("num", "new-client")] = int(job.new_client.num_nodes)
    content = RecordDict(
        {
            **records,
            p.METRICS: MetricRecord(metrics),
            p.CLIENT_INFO: ConfigRecord(
                {
                    p.DEVICE: str(job.device),
                    p.PROCESS: f"{where_name()} pid {os.getpid()}",
                    p.PEAK_RSS_MB: peak_rss_mb(),
                }
            ),
        }
    )
    return Message(content=content, reply_to=message)


TRAINING, EVALUATION, QUERY = 0, 1, 2  # what a handler's random draws are for


def _seed(job: LocalJob, server_round: int, purpose: int) -> None:
    """Seed this handler's random draws from the run's seed, the client, the round and the purpose.

    A simulation actor serves many clients one after another and the in-process engine
    serves all of them in one process: a draw that took the process's running random
    state would depend on which clients it served before. Seeding every handler on entry
    makes each client's numbers the same on every transport, every time.
    """
    pin_threads()  # the kernels too: their thread count changes the sums' order (stamen/client/device.py)
    base = training_seed(job, server_round)
    seed_device(base if purpose == TRAINING else base * 31 + 17 * purpose, job.device)


class Laps:
    """Wall time of a handler's phases, summed per phase key (reported to the server)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, key: str) -> None:
        now = time.perf_counter()
        self.seconds[key] = self.seconds.get(key, 0.0) + now - self._last
        self._last = now

    def add(self, key: str, seconds: float) -> None:
        """``seconds`` spent elsewhere for this handler (its share of a batch); the next lap starts now."""
        self.seconds[key] = self.seconds.get(key, 0.0) + seconds
        self._last = time.perf_counter()


@dataclass
class TrainingRound:
    """One client's training message in progress: what :func:`begin_training` found, for the training
    step and :func:`end_training` (see :func:`train`)."""

    message: Message
    context: Context
    job: LocalJob
    spec: AlgorithmSpec
    algorithm: ClientAlgorithm
    round_config: ConfigRecord
    server_round: int
    unlearning: bool
    model: torch.nn.Module
    metrics: dict
    laps: Laps
    stepped: bool = False  # an unlearning step other than local training (LAF, head repair, ascent) ran

    @property
    def num_partitions(self) -> int:
        return int(self.context.node_config["num-partitions"])


def begin_training(message: Message, context: Context, evaluate: bool = True) -> TrainingRound:
    """The round's job and model, the received model evaluated (when it is the global one; with ``evaluate``,
    else the caller evaluates it: :func:`evaluate_received_model`)."""
    laps = Laps()
    round_config = message.content[p.CONFIG]
    job = _job(context, head=round_config)
    spec, algorithm = client_algorithm(job.config.algorithm)
    job = algorithm.data_view(job)
    server_round = int(round_config.get(p.SERVER_ROUND, 1))
    _seed(job, server_round, EVALUATION)
    unlearning = any(key in round_config for key in p.UNLEARN_TRAIN_KEYS)
    num_partitions = int(context.node_config["num-partitions"])
    if unlearning:  # a round of an unlearning method: the data it sees (stamen/client/unlearning.py)
        from stamen.client.unlearning import round_view  # unlearning modules load only when asked

        job = round_view(job, round_config, num_partitions, server_round)
    # A malicious client (run-config keys attack, malicious-clients) trains on poisoned labels or forges its
    # reply; benign clients get their job and algorithm back unchanged (stamen/client/attacks.py).
    job, algorithm = attacked(job, algorithm, server_round, num_partitions)
    model = _received_model(job, algorithm, message)
    laps.lap(p.SETUP_SECONDS)
    work = TrainingRound(
        message, context, job, spec, algorithm, round_config, server_round, unlearning, model, {}, laps
    )
    if evaluate:
        evaluate_received_model(work)
    return work


def evaluate_received_model(work: TrainingRound, evaluation: Evaluation | None = None, seconds: float = 0.0) -> None:
    """The received model's figures, when it is the global one: ``evaluation`` (found elsewhere, in
    ``seconds``) or evaluated here."""
    if evaluation is None and work.spec.aggregates:
        started = time.perf_counter()
        work.metrics.update(_figures(work.model, work.job, GLOBAL_KEYS))
        seconds = time.perf_counter() - started
    elif evaluation is not None:
        work.metrics.update(_counts(evaluation, GLOBAL_KEYS))
    work.laps.add(p.EVAL_SECONDS, seconds)


def training_seed(job: LocalJob, server_round: int) -> int:
    """The seed of a client's training draws in a round (see :func:`_seed`)."""
    return job.config.seed_of(job.config.model_seed) * 1_000_003 + server_round * 1_009 + job.partition_id


def evaluates_trained_model(work: TrainingRound) -> bool:
    """Whether the reply carries the trained model's figures (the run's rules: see stamen/contract/rules.py)."""
    return work.job.config.local_eval or work.stepped or not work.spec.aggregates


def end_training(work: TrainingRound, evaluation: Evaluation | None = None, seconds: float = 0.0) -> Message:
    """The reply to a trained round: the trained model evaluated (when the run asks: ``evaluation``,
    found elsewhere in ``seconds``, or evaluated here), its records, the figures."""
    job, model, metrics, laps = work.job, work.model, work.metrics, work.laps
    if evaluates_trained_model(work):
        metrics.update(_counts(evaluation, LOCAL_KEYS) if evaluation is not None else _figures(model, job, LOCAL_KEYS))
    if evaluation is None:
        laps.lap(p.EVAL_SECONDS)
    else:
        laps.add(p.EVAL_SECONDS, seconds)
    records = work.algorithm.reply_records(model, job, work.server_round)
    laps.lap(p.PACK_SECONDS)
    metrics.update(laps.seconds)
    return _reply(work.message, job, records, metrics)


def train(message: Message, context: Context) -> Message:
    return train_begun(begin_training(message, context))


def train_begun(work: TrainingRound) -> Message:
    """The training step of a begun round (local training, DP-SGD or an unlearning method's step), replied."""
    job, model = work.job, work.model
    _seed(job, work.server_round, TRAINING)
    step = None
    if work.unlearning:
        from stamen.client.unlearning import unlearning_round  # unlearning modules load only when asked

        step = unlearning_round(job, model, work.round_config, work.num_partitions, work.server_round)
    if step is not None:  # LAF, head repair or gradient ascent, not local training
        work.model, work.metrics[p.TRAIN_LOSS] = step
        work.stepped = True
    elif job.config.privacy == "dp-sgd":
        work.metrics[p.TRAIN_LOSS], private = train_round(model, job, work.server_round)
        work.metrics.update(private)
    else:
        work.metrics[p.TRAIN_LOSS] = work.algorithm.train(model, job, work.round_config)
        work.metrics.update(work.algorithm.train_metrics(job))
    work.laps.lap(p.TRAIN_SECONDS)
    return end_training(work)


def evaluate_received(message: Message, context: Context) -> Message:
    laps = Laps()
    job = _job(context)
    _seed(job, int(message.content[p.CONFIG].get(p.SERVER_ROUND, 0)) if p.CONFIG in message.content else 0, EVALUATION)
    _, algorithm = client_algorithm(job.config.algorithm)
    job = algorithm.data_view(job)
    model = _received_model(job, algorithm, message)
    laps.lap(p.SETUP_SECONDS)
    metrics = _figures(model, job, GLOBAL_KEYS)
    laps.lap(p.EVAL_SECONDS)
    metrics.update(laps.seconds)
    return _reply(message, job, {p.ARRAYS: ArrayRecord()}, metrics)


def query(message: Message, context: Context) -> Message:
    """Federated certificates and unlearning (the client replies ratios, counts or key statistics
    only), or the seeded initial model (client-level DP clips updates from it)."""
    job = _job(context)
    _seed(job, 0, QUERY)
    kind = message.content[p.CONFIG].get(p.QUERY)
    if kind == p.INITIAL_MODEL_QUERY:
        return Message(content=RecordDict({p.ARRAYS: weights_record(job.model().state_dict())}), reply_to=message)
    if kind in p.UNLEARN_QUERIES:
        from stamen.client.unlearning import answer  # unlearning modules load only when asked

        return answer(
            job,
            message,
            _received_model(job, client_algorithm(job.config.algorithm)[1], message),
            int(context.node_config["num-partitions"]),
        )
    if kind != p.CERTIFY_QUERY:
        reply = client_algorithm(job.config.algorithm)[1].query(job, message)  # the algorithm's own kinds
        if reply is not None:
            return reply
        raise ValueError(
            f"unknown query {kind!r}; this client answers "
            f"{', '.join((p.CERTIFY_QUERY, p.INITIAL_MODEL_QUERY, *p.UNLEARN_QUERIES))}"
        )
    metrics = certify_local(job.data, job.config, job.partition_id)
    metrics[p.PARTITION_ID] = job.partition_id
    return Message(content=RecordDict({p.METRICS: MetricRecord(metrics)}), reply_to=message)
