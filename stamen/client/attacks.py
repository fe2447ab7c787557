r"""Malicious clients: label flipping, sign flipping and Gaussian replies, seeded, to test robust aggregation.

With ``attack`` and ``malicious-clients`` set, the malicious clients of a run attack in
every training round; every other client is untouched. With :math:`w_g` the global
weights the client received (round 1: the seeded initial model) and :math:`w_\ell` the
weights its local training produced, a malicious client

- ``label-flip`` (data poisoning; Tolpegin, Truex, Gursoy, Liu, "Data Poisoning Attacks
  Against Federated Learning Systems", ESORICS 2020): trains on its own labels with
  :math:`k = \lfloor \phi\, n_{\text{train}} \rfloor` of its training labels
  (:math:`\phi` = ``attack-flip-fraction``) changed to another class,
  :math:`y \mapsto (y + r) \bmod C` with :math:`r` uniform in :math:`1..C-1`. The
  :math:`k` nodes and the :math:`r` are drawn once from the run's seed and the partition
  id, so the client's poisoned labels are the same in every round and every run;
  validation and test labels stay clean. A training example is what the run's task
  classifies: a node, or for graph classification a whole graph (its class, the
  client's ``y`` over graphs, under its graph-level ``train_mask``); link prediction's
  labels are edges of its message graph, which its task refuses to flip (:mod:`stamen.contract.tasks`);
- ``sign-flip`` (model poisoning; the sign-flipping attack of Li, Xu, Chen, Giannakis,
  Ling, "RSA: Byzantine-Robust Stochastic Aggregation Methods", AAAI 2019) sends
  :math:`w_g - s\,(w_\ell - w_g)`, its update reversed and scaled by :math:`s` = ``attack-scale``;
- ``gaussian`` (Blanchard, El Mhamdi, Guerraoui, Stainer, NeurIPS 2017, whose Byzantine
  workers send Gaussian vectors) sends :math:`w_g + \xi`,
  :math:`\xi \sim \mathcal{N}(0, \sigma^2 I)`, :math:`\sigma` = ``attack-std``: an update
  of pure noise, drawn from the run's seed, the partition and the round.

Model poisoning changes the floating-point entries of the ``arrays`` record the
algorithm replies with (e.g. FedLoG's shared weights); other records and integer
buffers go as trained. ``malicious-clients`` is a count :math:`N` (the :math:`N`
partitions a generator seeded by the run's seed draws) or a comma list of partition
ids; at least one client stays benign.

The ClientApp's training handler calls :func:`attacked` once, before it builds the
received model: it returns the job (with poisoned labels for ``label-flip``) and the
algorithm (wrapped by :class:`ForgedReply` for model poisoning) that the handler then
uses as usual, so training with DP-SGD, unlearning rounds and every algorithm's hooks
are attacked alike.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from enum import StrEnum

import numpy as np
import torch
from flwr.app import ArrayRecord, ConfigRecord, RecordDict

from stamen.client.algorithms import ClientAlgorithm
from stamen.client.job import LocalJob
from stamen.client.weights import record_tensors, weights_record
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig


class Attack(StrEnum):
    """What a malicious client does (the ``attack`` key)."""

    NONE = "none"
    LABEL_FLIP = "label-flip"
    SIGN_FLIP = "sign-flip"
    GAUSSIAN = "gaussian"


def malicious_partitions(text: str, num_clients: int, seed: int) -> frozenset[int]:
    """The partition ids ``malicious-clients`` names among ``num_clients``; ValueError in one line.

    A count :math:`N` draws :math:`N` of the partitions without replacement from a
    generator seeded by ``seed``; a comma list names them.
    """
    text = text.strip()
    if text == "":
        return frozenset()
    if "," not in text:
        count = int(text)
        if count >= num_clients:
            raise ValueError(
                f"malicious-clients={text} leaves no benign client among {num_clients} clients; "
                f"choose fewer than {num_clients}"
            )
        rng = np.random.default_rng([seed, 0x6D616C])  # its own stream: no other draw of the run moves it
        return frozenset(int(i) for i in rng.choice(num_clients, size=count, replace=False))
    ids = frozenset(int(part) for part in text.split(",") if part.strip())
    outside = sorted(i for i in ids if i >= num_clients)
    if outside:
        raise ValueError(
            f"malicious-clients names partition {outside[0]}, but the clients are 0..{num_clients - 1}; "
            "give ids in that range"
        )
    if len(ids) >= num_clients:
        raise ValueError(
            f"malicious-clients={text!r} names all {num_clients} clients; leave at least one benign client"
        )
    return ids


def check_attack(config: RunConfig, num_clients: int) -> frozenset[int]:
    """The malicious partitions of a run over ``num_clients`` clients (ValueError in one line)."""
    return malicious_partitions(config.malicious_clients, num_clients, config.seed)


def flipped_labels(
    y: torch.Tensor, train_mask: torch.Tensor, num_classes: int, fraction: float, seed: int, partition_id: int
) -> torch.Tensor:
    """``y`` with :math:`\\lfloor` ``fraction`` :math:`\\cdot n_{train} \\rfloor` seeded training labels
    moved to another class (a new tensor; ``y`` is left as it is)."""
    train = torch.nonzero(train_mask, as_tuple=False).view(-1).cpu().numpy()
    count = math.floor(fraction * train.size)
    rng = np.random.default_rng([seed, partition_id, 0x666C6970])
    chosen = rng.choice(train, size=count, replace=False)
    shift = rng.integers(1, num_classes, size=count)
    flipped = y.clone()
    index = torch.as_tensor(chosen, dtype=torch.long, device=y.device)
    flipped[index] = (y[index] + torch.as_tensor(shift, dtype=y.dtype, device=y.device)) % num_classes
    return flipped


def sign_flipped(
    received: dict[str, torch.Tensor], local: dict[str, torch.Tensor], scale: float
) -> dict[str, torch.Tensor]:
    """:math:`w_g - s (w_\\ell - w_g)` for every floating-point entry; others as trained."""
    return {
        key: received[key] - scale * (value - received[key]) if value.is_floating_point() else value
        for key, value in local.items()
    }


def gaussian_reply(
    received: dict[str, torch.Tensor], local: dict[str, torch.Tensor], std: float, seed: int
) -> dict[str, torch.Tensor]:
    """:math:`w_g + \\xi`, :math:`\\xi \\sim \\mathcal{N}(0, \\sigma^2 I)` drawn from ``seed``, for every
    floating-point entry; others as trained."""
    generator = torch.Generator().manual_seed(seed)
    forged = {}
    for key, value in local.items():
        if value.is_floating_point():
            noise = torch.randn(value.shape, generator=generator, dtype=value.dtype)
            forged[key] = received[key] + std * noise.to(value.device)
        else:
            forged[key] = value
    return forged


def noise_seed(seed: int, partition_id: int, server_round: int) -> int:
    """The Gaussian attack's seed for one client and round."""
    return int(np.random.SeedSequence([seed, partition_id, server_round, 0x6E6F6973]).generate_state(1)[0])


class ForgedReply(ClientAlgorithm):
    """A client algorithm whose ``arrays`` reply is forged from the received and the trained weights.

    Args:
        inner: the run's client algorithm (its hooks do the work; this only rewrites its reply).
        attack: ``sign-flip`` or ``gaussian``.
        config: the run config (``attack-scale``, ``attack-std``, ``seed``).
        partition_id: the malicious client.
    """

    def __init__(self, inner: ClientAlgorithm, attack: Attack, config: RunConfig, partition_id: int) -> None:
        self.inner = inner
        self.attack = attack
        self.config = config
        self.partition_id = partition_id
        self.received: dict[str, torch.Tensor] = {}

    def new_model(self, job: LocalJob) -> torch.nn.Module:
        return self.inner.new_model(job)

    def receive(self, model: torch.nn.Module, job: LocalJob, content: RecordDict) -> None:
        self.inner.receive(model, job, content)
        self.received = {key: value.detach().clone() for key, value in model.state_dict().items()}

    def train(self, model: torch.nn.Module, job: LocalJob, round_config: ConfigRecord) -> float:
        return self.inner.train(model, job, round_config)

    def reply_records(self, model: torch.nn.Module, job: LocalJob, server_round: int) -> dict[str, ArrayRecord]:
        records = dict(self.inner.reply_records(model, job, server_round))
        local = record_tensors(records[p.ARRAYS])
        missing = [key for key in local if key not in self.received]
        if missing:
            raise ValueError(f"attack={self.attack.value!r}: the reply's weight {missing[0]!r} is not in the model")
        if self.attack == Attack.SIGN_FLIP:
            forged = sign_flipped(self.received, local, self.config.attack_scale)
        else:
            seed = noise_seed(self.config.seed, self.partition_id, server_round)
            forged = gaussian_reply(self.received, local, self.config.attack_std, seed)
        records[p.ARRAYS] = weights_record(forged)
        return records


def attacked(
    job: LocalJob, algorithm: ClientAlgorithm, server_round: int, num_clients: int
) -> tuple[LocalJob, ClientAlgorithm]:
    """The job and algorithm a training round uses: the given ones for a benign client (or no attack).

    A ``label-flip`` client gets a job whose data has its poisoned training labels (a
    copy; the cached subgraph stays clean); a ``sign-flip`` or ``gaussian`` client gets
    its algorithm wrapped by :class:`ForgedReply`.
    """
    attack = Attack(job.config.attack)
    if attack == Attack.NONE or job.partition_id not in check_attack(job.config, num_clients):
        return job, algorithm
    if attack == Attack.LABEL_FLIP:
        data = copy.copy(job.data)  # a new Data object sharing the tensors; only y is replaced
        data.y = flipped_labels(
            job.data.y,
            job.data.train_mask,
            int(job.data.num_classes),
            job.config.attack_flip_fraction,
            job.config.seed,
            job.partition_id,
        )
        return dataclasses.replace(job, data=data), algorithm
    return job, ForgedReply(algorithm, attack, job.config, job.partition_id)
