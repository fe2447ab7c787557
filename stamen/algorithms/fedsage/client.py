"""FedSage's client parts: ``fedsage-local`` (:data:`PART`) and ``fedsage+`` (:data:`PLUS_PART`).

Zhang, Yang, Li, Sun and Yiu, NeurIPS 2021 (the math: :mod:`stamen.algorithms.fedsage.model`; the
server parts: :mod:`stamen.algorithms.fedsage.server`).

**fedsage-local** (:class:`FedSageClient`): mend the subgraph with generated
neighbours, then FedAvg a classifier on it. The first time a client trains it hides
``fedsage-hidden-portion`` of its nodes, trains its missing-neighbour generator
(NeighGen) on that impaired subgraph for ``fedsage-gen-epochs`` and keeps it in its
state; from then on its classifier (the run's ``model``; the paper's is GraphSAGE,
``model='sage'``) computes on its subgraph mended by the generator, in training and
in every evaluation. Only the classifier's weights travel; the generator never
leaves the client. Each generator learns from its own subgraph only, as in the
paper's locally trained NeighGen.

**fedsage+** (:class:`FedSagePlusClient`): the same classifier, its NeighGen trained
with the other clients' help. Before the classifier's first rounds (``fedsage-schedule``) the server sends
three kinds of query (the ``FEDSAGE_*`` names of :mod:`stamen.contract.protocol`), which this
client answers in :meth:`FedSagePlusClient.query`:

- ``start``: build the seeded generator and the impaired subgraph (as ``fedsage-local``
  does), run step 1's forward and backward pass of the local loss, keep the gradients
  in the state and reply the step's request: fGen's input :math:`\\mathbf{h}_v` and
  slots :math:`k_v` of the nodes with a local target, fGen's weights and their Gram
  matrices (:func:`stamen.algorithms.fedsage.cross.request_gram`);
- ``cross``: for every other client's request, the parts of the gradient of
  :math:`\\mathcal{L}^{i,j}_f` on this client's own features (never the features;
  :func:`stamen.algorithms.fedsage.cross.cross_parts`);
- ``step``: complete the parts the server summed into the gradient
  (:func:`stamen.algorithms.fedsage.cross.complete_gradients`), add :math:`\\alpha` times it to the
  kept local ones, take one Adam step (moments kept in the state between messages),
  then reply the next step's request, or, after the last step, keep the generator
  where ``fedsage-local``'s classifier reads it. Under ``fedsage-schedule='paper'``
  (steps interleaved with the classifier's first rounds, :mod:`stamen.algorithms.fedsage.server`) every
  step keeps it there, so each round's classifier mends with the latest generator.

Step :math:`t` draws its dropout and noise from ``epoch_seed(seed, t - 1)``, as epoch
:math:`t - 1` of ``fedsage-local``'s training does, so with ``fedsage-cross-weight=0``
and ``fedsage-gen-rounds`` equal to ``fedsage-gen-epochs`` the two train the same
generator. From then on the client is :class:`FedSageClient`: only the classifier's
weights travel. A client that missed the generator phase trains its generator locally
when it first needs it.
"""

from __future__ import annotations

import copy
import functools
import itertools
import warnings

import torch
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict

from stamen.algorithms.fedsage import FedSageSchedule
from stamen.algorithms.fedsage import messages as wire
from stamen.algorithms.fedsage.cross import GRAM, GRAM_BIAS, complete_gradients, cross_parts, request_gram
from stamen.algorithms.fedsage.model import (
    Impaired,
    MendedClassifier,
    NeighGen,
    epoch_seed,
    local_gradients,
    new_optimizer,
    train_neighgen,
)
from stamen.client.algorithms import ClientAlgorithm, local_step
from stamen.client.device import seed_device
from stamen.client.job import LocalJob, private_record, private_tensors
from stamen.client.weights import load_weights, record_tensors, weights_record
from stamen.contract import protocol as p
from stamen.contract.arrays import array_values
from stamen.models.object_cache import kept
from stamen.models.training import adam_state_record, fit

GENERATOR = "fedsage-generator"  # state: the client's trained NeighGen


def new_generator(job: LocalJob) -> NeighGen:
    config = job.config
    return NeighGen(job.data.num_features, config.option("fedsage-gen-hidden"), config.option("fedsage-max-pred")).to(
        job.device
    )


@functools.lru_cache(maxsize=8)
def _layers(features: int, hidden: int, max_pred: int) -> NeighGen:
    with torch.device("meta"):
        return NeighGen(features, hidden, max_pred)


def layers_only(job: LocalJob) -> NeighGen:
    """The client's generator as layers without weights (on the ``meta`` device), built once per shape in a
    process (a NeighGen takes about 5 ms to build, and a client needed one per request it answered). Shared:
    read its layers, or call them with weights of one's own (:func:`torch.func.functional_call`, which
    lends them the weights for the call); never train it."""
    config = job.config
    return _layers(job.data.num_features, config.option("fedsage-gen-hidden"), config.option("fedsage-max-pred"))


def unset_generator(job: LocalJob) -> NeighGen:
    """A generator whose weights are about to be loaded: built without drawing initial ones (fGen's last
    layer alone is 0.9 M draws on Cora, and a client loads weights several times a step)."""
    return copy.deepcopy(layers_only(job)).to_empty(device=job.device)


def generator_seed(job: LocalJob) -> int:
    """The seed of the client's generator: its initial weights, hidden nodes and training draws."""
    return job.config.seed * 1_000_003 + job.partition_id


def impaired_subgraph(job: LocalJob) -> Impaired:
    """The client's impaired subgraph (the same hidden nodes every time: seeded by client)."""
    config = job.config
    return Impaired(
        job.data.x, job.data.edge_index, config.option("fedsage-hidden-portion"), config.option("fedsage-max-pred"),
        torch.Generator().manual_seed(generator_seed(job)),
    )  # fmt: skip


def initial_generator(job: LocalJob) -> NeighGen:
    """The client's untrained generator, seeded by client."""
    seed_device(generator_seed(job), job.device)
    return new_generator(job)


_LOADS = itertools.count()  # numbers the generators loaded from state records in this process


def stored_generator(job: LocalJob) -> tuple[NeighGen, str]:
    """The frozen generator kept in the client's state, and a key of its weights: loaded once per stored record.

    A client's state record of its generator is replaced, never written to, when the
    generator changes, so the module loaded from it is kept while the record lives
    (:mod:`stamen.models.object_cache`), and a number given at loading keys its weights (and so
    the mended graph, :func:`stamen.algorithms.fedsage.model.mended_once`): a classifier round does not
    parse the generator's 1.5 M weights (Cora) again for each client, and no step hashes them.
    """

    def load() -> tuple[NeighGen, str]:
        generator = unset_generator(job)
        generator.load_state_dict(private_tensors(job.state[GENERATOR]))
        generator.eval().requires_grad_(False)
        return generator, f"state-record-{next(_LOADS)}"

    return kept(job.state[GENERATOR], ("fedsage-generator", str(job.device)), load)


def trained_generator(job: LocalJob) -> NeighGen:
    """The client's NeighGen: from its state, or trained now on its impaired subgraph (seeded by client)."""
    if GENERATOR in job.state:
        return stored_generator(job)[0]
    generator = initial_generator(job)
    epochs, lr = job.config.option("fedsage-gen-epochs"), job.config.option("fedsage-gen-lr")
    train_neighgen(
        generator, job.data.x, job.data.edge_index, impaired_subgraph(job), epochs, lr, seed=generator_seed(job)
    )
    job.state[GENERATOR] = private_record(generator.state_dict())
    return generator


class FedSageClient(ClientAlgorithm):
    """The run's classifier on the graph mended by the client's own generator."""

    def new_model(self, job: LocalJob) -> MendedClassifier:
        if GENERATOR in job.state:
            return MendedClassifier(job.model(), *stored_generator(job))
        return MendedClassifier(job.model(), trained_generator(job))

    def receive(self, model: MendedClassifier, job: LocalJob, content: RecordDict) -> None:  # type: ignore[override]
        if len(content[p.ARRAYS]) > 0:
            load_weights(model.classifier, content[p.ARRAYS])

    @local_step  # FedAvg's, on the mended graph: the in-process engine may train it together
    def train(self, model: MendedClassifier, job: LocalJob, round_config: ConfigRecord) -> float:  # type: ignore[override]
        optimizer = job.optimizer(model.classifier)
        loss = fit(model, job.data, job.config.local_epochs, optimizer)
        job.keep_optimizer(optimizer)
        return loss

    def reply_records(  # type: ignore[override]
        self, model: MendedClassifier, job: LocalJob, server_round: int
    ) -> dict[str, ArrayRecord]:
        return {p.ARRAYS: weights_record(model.classifier.state_dict())}


# fedsage+: the generator phase's queries

WEIGHTS = "fedsage-plus-weights"  # state: the generator's weights while it trains
MOMENTS = "fedsage-plus-adam"  # state: its Adam moments between steps
PENDING = "fedsage-plus-local-gradients"  # state: the local loss's gradients of the pending step
HEAD_PREFIX = "feature_head."


def _tensor(array: Array, job: LocalJob) -> torch.Tensor:
    return torch.from_numpy(array_values(array)).to(job.device)


def _read_only(array: Array, job: LocalJob) -> torch.Tensor:
    """The array's values without a copy on the CPU (the message's bytes): for a reader that never writes."""
    with warnings.catch_warnings():  # torch notes that the bytes are read-only: nothing here writes to them
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(array_values(array, writable=False)).to(job.device)


def _request(job: LocalJob, generator: NeighGen, step: int) -> tuple[dict[str, ArrayRecord], dict[str, float]]:
    """Step ``step``'s forward and backward pass of the local loss: keep gradients and weights, reply the request."""
    seed_device(epoch_seed(generator_seed(job), step - 1), job.device)
    impaired = impaired_subgraph(job)
    loss_d, loss_f, head_input = local_gradients(generator, job.data.x[impaired.kept], impaired)
    job.state[PENDING] = private_record(
        {
            name: (param.grad if param.grad is not None else torch.zeros_like(param)).detach()
            for name, param in generator.named_parameters()
        }
    )
    job.state[WEIGHTS] = private_record(generator.state_dict())
    slots = impaired.valid.sum(dim=1)
    used = slots > 0
    request = {wire.FEDSAGE_INPUT: head_input[used], wire.FEDSAGE_SLOTS: slots[used]}
    request.update(
        {f"{wire.FEDSAGE_HEAD}{name}": w.detach() for name, w in generator.feature_head.state_dict().items()}
    )
    request.update(request_gram(generator.feature_head, generator.max_pred))
    return {wire.FEDSAGE_REQUEST: weights_record(request)}, {wire.FEDSAGE_LOSS_D: loss_d, wire.FEDSAGE_LOSS_F: loss_f}


def _forget_training(job: LocalJob) -> None:
    for key in (WEIGHTS, MOMENTS, PENDING):
        if key in job.state:
            del job.state[key]


def start(job: LocalJob) -> tuple[dict[str, ArrayRecord], dict[str, float]]:
    """The seeded generator's first request (step 1)."""
    _forget_training(job)
    return _request(job, initial_generator(job), 1)


def cross(job: LocalJob, content: RecordDict, step: int) -> tuple[dict[str, ArrayRecord], dict[str, float]]:
    """The parts of the gradient of every other client's cross term on this client's features (never the features)."""
    requests: dict[int, dict[str, Array]] = {}
    for key, array in content[wire.FEDSAGE_REQUESTS].items():
        partition, name = key.split("/", 1)
        requests.setdefault(int(partition), {})[name] = array
    layers = layers_only(job).feature_head  # each request brings its weights
    gradients: dict[str, torch.Tensor] = {}
    total = 0.0
    for partition in sorted(requests):
        request = requests[partition]
        head = {
            name[len(wire.FEDSAGE_HEAD) :]: _read_only(a, job)
            for name, a in request.items()
            if name.startswith(wire.FEDSAGE_HEAD)
        }
        seed_device(generator_seed(job) * 31 + 7_919 * step + partition, job.device)  # fGen's dropout at this client
        loss, grads = cross_parts(
            layers,
            head,
            _tensor(request[wire.FEDSAGE_INPUT], job),
            _tensor(request[wire.FEDSAGE_SLOTS], job),
            job.data.x,
            {key: _tensor(request[key], job) for key in (GRAM, GRAM_BIAS)},
        )
        total += loss
        gradients.update({f"{partition}/{name}": grad for name, grad in grads.items()})
    return {wire.FEDSAGE_GRADIENTS: weights_record(gradients)}, {wire.FEDSAGE_CROSS_LOSS: total}


def step(job: LocalJob, content: RecordDict, index: int, last: bool) -> tuple[dict[str, ArrayRecord], dict[str, float]]:
    """Step ``index``'s Adam step on the local plus alpha times the forwarded gradients; the next request."""
    if WEIGHTS not in job.state or PENDING not in job.state:
        raise RuntimeError(
            f"{wire.FEDSAGE_STEP_QUERY} before {wire.FEDSAGE_START_QUERY}: this client has no generator in training"
        )
    generator = unset_generator(job)
    generator.load_state_dict(private_tensors(job.state[WEIGHTS]))
    optimizer = new_optimizer(generator, job.config.option("fedsage-gen-lr"))
    job.resume(optimizer, MOMENTS)
    local = private_tensors(job.state[PENDING])
    forwarded = record_tensors(content[wire.FEDSAGE_GRADIENTS]) if wire.FEDSAGE_GRADIENTS in content else {}
    if forwarded:  # the parts summed over the other clients, completed with this generator's fGen
        forwarded = complete_gradients(generator.feature_head, {k: v.to(job.device) for k, v in forwarded.items()})
    alpha = job.config.option("fedsage-cross-weight")
    for name, param in generator.named_parameters():
        grad = local[name].to(job.device)
        if name.startswith(HEAD_PREFIX) and name[len(HEAD_PREFIX) :] in forwarded:
            grad = grad + alpha * forwarded[name[len(HEAD_PREFIX) :]].to(job.device)
        param.grad = grad
    optimizer.step()
    if last or job.config.option("fedsage-schedule") == FedSageSchedule.PAPER:  # paper: the next round mends with it
        job.state[GENERATOR] = private_record(generator.state_dict())
    if last:
        _forget_training(job)
        return {}, {}
    job.state[MOMENTS] = private_record(adam_state_record(optimizer))
    return _request(job, generator, index + 1)


class FedSagePlusClient(FedSageClient):
    """FedSage's mended classifier, with the generator phase's queries answered."""

    def query(self, job: LocalJob, message: Message) -> Message | None:
        config: ConfigRecord = message.content[p.CONFIG]
        kind = config.get(p.QUERY)
        index = int(config.get(wire.FEDSAGE_STEP, 0))
        if kind == wire.FEDSAGE_START_QUERY:
            records, metrics = start(job)
        elif kind == wire.FEDSAGE_CROSS_QUERY:
            records, metrics = cross(job, message.content, index)
        elif kind == wire.FEDSAGE_STEP_QUERY:
            records, metrics = step(job, message.content, index, bool(config.get(wire.FEDSAGE_LAST, False)))
        else:
            return None
        content = RecordDict({**records, p.METRICS: MetricRecord({p.PARTITION_ID: job.partition_id, **metrics})})
        return Message(content=content, reply_to=message)


PART = FedSageClient()  # fedsage-local
PLUS_PART = FedSagePlusClient()  # fedsage+
