"""FedLoG client: prototype branches over personal synthetic nodes, trained with global synthetic data.

The client keeps in its state (Flower's ``context.state``) what is personal: both
branches' synthetic nodes, its per-class lambda and, once the server sent them, the
global synthetic nodes of the round and the latest per-class generators. The first time it
trains it warms the encoder up with cross-entropy (early-stopped on validation) and
pretrains its neighbour generator on its own graph.

The model it receives is the global model: the averaged weights with the global
synthetic nodes as both branches' synthetic nodes (random ones before the first
condensation). It then trains its personalised model (the averaged weights with its
own synthetic nodes) and replies with the weights (no synthetic nodes), its
head-branch synthetic nodes and class proportions, and, the first time, its
generator: never a real node's features or label.
"""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, ConfigRecord, RecordDict

from stamen.algorithms.fedlog import FedLoGGenerators, FedLoGWarmupStop
from stamen.algorithms.fedlog import messages as wire
from stamen.algorithms.fedlog.model import SYNTHETIC_KEYS, FedLoGNet
from stamen.algorithms.fedlog.neighbour_generator import NeighbourGenerator, train_generator
from stamen.algorithms.fedlog.training import FedLoGHyper, GlobalSynthetic, local_epochs, warm_up
from stamen.client.algorithms import ClientAlgorithm
from stamen.client.device import seed_device
from stamen.client.job import LocalJob, private_record, private_tensors
from stamen.client.weights import load_weights, record_tensors, weights_record
from stamen.contract import protocol as p
from stamen.models.object_cache import kept

PERSONAL = "fedlog-personal"  # state: synthetic_head, synthetic_tail, lambda
GENERATOR = "fedlog-own-generator"  # state: the pretrained generator until it is uploaded
GENERATOR_LR = 0.01


def new_model(job: LocalJob) -> FedLoGNet:
    """The seeded initial model; every client builds the same weights."""
    seed_device(job.config.seed, job.device)
    config = job.config
    model = FedLoGNet(
        job.data.num_features,
        int(job.data.num_classes),
        hidden=config.option("fedlog-hidden"),
        embedding=config.option("fedlog-embedding"),
        num_proto=config.option("fedlog-num-proto"),
        gamma=config.option("fedlog-gamma"),
    )
    return model.to(job.device)


def new_generator(job: LocalJob) -> NeighbourGenerator:
    return NeighbourGenerator(job.data.num_features, job.config.option("fedlog-generator-hidden")).to(job.device)


def receive(model: FedLoGNet, job: LocalJob, content: RecordDict) -> None:
    """Load the averaged weights; take the global synthetic nodes as the model's own; keep them for training."""
    if len(content[p.ARRAYS]) > 0:
        load_weights(model, content[p.ARRAYS], strict=False)
    if wire.FEDLOG_GLOBAL in content:
        job.state[wire.FEDLOG_GLOBAL] = content[wire.FEDLOG_GLOBAL]
    elif wire.FEDLOG_GLOBAL in job.state:
        del job.state[wire.FEDLOG_GLOBAL]
    if wire.FEDLOG_GENERATORS in content:  # sent only when they change: kept until then
        job.state[wire.FEDLOG_GENERATORS] = content[wire.FEDLOG_GENERATORS]
    if wire.FEDLOG_GLOBAL in content:
        features = torch.from_numpy(content[wire.FEDLOG_GLOBAL][wire.GLOBAL_FEATURES].numpy()).to(job.device)
        with torch.no_grad():
            model.synthetic_head.copy_(features)
            model.synthetic_tail.copy_(features)


def hyperparameters(job: LocalJob) -> FedLoGHyper:
    config = job.config
    return FedLoGHyper(
        lr=config.option("fedlog-lr"),
        weight_decay=config.weight_decay,
        batch_size=config.option("fedlog-batch-size"),
        beta_metric=config.option("fedlog-beta-metric"),
        beta_norm=config.option("fedlog-beta-norm"),
        beta_cd=config.option("fedlog-beta-cd"),
        lambda_step=config.option("fedlog-lambda-step"),
        lambda_threshold=config.option("fedlog-lambda-threshold"),
    )


def _global_synthetic(job: LocalJob) -> GlobalSynthetic | None:
    if wire.FEDLOG_GLOBAL not in job.state or wire.FEDLOG_GENERATORS not in job.state:
        return None
    record = record_tensors(job.state[wire.FEDLOG_GLOBAL])
    features = record[wire.GLOBAL_FEATURES].to(job.device)
    labels = record[wire.GLOBAL_LABELS].long().to(job.device)
    untrained = job.config.option("fedlog-class-generators") == FedLoGGenerators.UNTRAINED
    return GlobalSynthetic(features, labels, _untrained_generators(job) if untrained else _generators(job))


def _untrained_generators(job: LocalJob) -> list[NeighbourGenerator]:
    """``fedlog-class-generators='untrained'``, the FedLoG authors' code: one generator per class with initial
    weights drawn from the run's seed, the same at every client and never trained (their ``Client`` builds
    ``neigh_cls_gen`` once and no line loads the server's ``Server_NeighGen_cls_weights`` into it). Drawn
    from their own generator, so the run's other draws stay as they are."""

    def build() -> list[NeighbourGenerator]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(job.config.seed)
            generators = [new_generator(job) for _ in range(int(job.data.num_classes))]
        return [generator.eval().requires_grad_(False) for generator in generators]

    config = job.config
    key = ("fedlog-untrained-generators", str(job.device), config.seed, config.option("fedlog-generator-hidden"))
    return kept(job.data, key, build)


def _generators(job: LocalJob) -> list[NeighbourGenerator]:
    """The per-class generators of the record the server sent last, built once per record in a process
    (:mod:`stamen.models.object_cache`; the record is replaced, never written to, when they change) without
    drawing initial weights: they only generate, in evaluation mode and without a gradient."""
    record = job.state[wire.FEDLOG_GENERATORS]

    def build() -> list[NeighbourGenerator]:
        weights = record_tensors(record)
        generators = []
        for c in range(int(job.data.num_classes)):
            with torch.device("meta"):
                generator = NeighbourGenerator(job.data.num_features, job.config.option("fedlog-generator-hidden"))
            generator = generator.to_empty(device=job.device)
            own = {name[len(f"{c}.") :]: w for name, w in weights.items() if name.startswith(f"{c}.")}
            generator.load_state_dict(own)
            generators.append(generator.eval().requires_grad_(False))
        return generators

    return kept(record, ("fedlog-generators", str(job.device)), build)


def train(model: FedLoGNet, job: LocalJob, round_config: ConfigRecord) -> float:
    hyper = hyperparameters(job)
    num_classes = int(job.data.num_classes)
    if PERSONAL in job.state:
        personal = private_tensors(job.state[PERSONAL])
        with torch.no_grad():
            for key in SYNTHETIC_KEYS:
                getattr(model, key).copy_(personal[key].to(job.device))
        lam = personal["lambda"].to(job.device)
    else:  # first participation: warm up the encoder, pretrain the neighbour generator
        warm_up(
            model,
            job.data,
            hyper,
            job.config.option("fedlog-warmup-epochs"),
            job.config.option("fedlog-warmup-patience"),
            job.config.option("fedlog-warmup-stop") == FedLoGWarmupStop.TEST_MASK,
        )
        generator = new_generator(job)
        train_generator(
            generator,
            job.data.x,
            job.data.edge_index,
            job.data.train_mask,
            job.config.option("fedlog-generator-epochs"),
            lr=GENERATOR_LR,
        )
        job.state[GENERATOR] = weights_record(generator.state_dict())
        lam = torch.zeros(num_classes, device=job.device)
    loss, lam = local_epochs(model, job.data, hyper, job.config.local_epochs, lam, _global_synthetic(job))
    state = {key: getattr(model, key).detach() for key in SYNTHETIC_KEYS}
    job.state[PERSONAL] = private_record({**state, "lambda": lam.detach()})
    return loss


def class_proportions(job: LocalJob) -> torch.Tensor:
    counts = torch.bincount(job.data.y[job.data.train_mask], minlength=int(job.data.num_classes)).float()
    return counts / counts.sum().clamp(min=1)


def reply_records(model: FedLoGNet, job: LocalJob, server_round: int) -> dict[str, ArrayRecord]:
    upload = {wire.SYNTHETIC_HEAD: model.synthetic_head.detach(), wire.CLASS_PROPORTIONS: class_proportions(job)}
    records = {p.ARRAYS: weights_record(model.shared_state()), wire.FEDLOG_UPLOAD: ArrayRecord(upload)}
    if GENERATOR in job.state:
        records[wire.FEDLOG_GENERATOR] = job.state[GENERATOR]
        del job.state[GENERATOR]
    return records


class FedLoGClient(ClientAlgorithm):
    """FedLoG's hooks: its own model, what it receives besides weights, what it uploads."""

    def new_model(self, job: LocalJob) -> FedLoGNet:
        return new_model(job)

    def receive(self, model: FedLoGNet, job: LocalJob, content: RecordDict) -> None:  # type: ignore[override]
        receive(model, job, content)

    def train(self, model: FedLoGNet, job: LocalJob, round_config: ConfigRecord) -> float:  # type: ignore[override]
        return train(model, job, round_config)

    def reply_records(  # type: ignore[override]
        self, model: FedLoGNet, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        return reply_records(model, job, server_round)


PART = FedLoGClient()
