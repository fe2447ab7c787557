"""A client's part in federated unlearning: statistics, counts and unlearning rounds, never node rows.

The client works out its own share of the request from the request alone
(:func:`stamen.unlearn.requests.client_forget_mask`, :func:`~stamen.unlearn.requests.remaining_view`).
It answers three queries (names in :mod:`stamen.contract.protocol`):

- ``wash-statistics`` (wash): :math:`\\mathbf{C}_i` (``d x d``) over its remaining training nodes
  and, where it holds data to forget, :math:`\\mathbf{K}_f^\\top\\mathbf{K}_f` (``d x d``) and
  :math:`\\mathbf{K}_f^\\top\\mathbf{R}` (``d x C``) (:func:`stamen.unlearn.wash.client_wash_statistics`);
- ``wash-heldout`` (wash): for each candidate edit, how many of its validation predictions
  change (:func:`stamen.unlearn.wash.prediction_changes`), two counts;
- ``unlearn-evaluate`` (the roll call and every evaluation): correct and total counts on
  :math:`D_r`, :math:`D_f` and its test nodes (:func:`stamen.unlearn.evaluate.client_counts`).

Training messages flagged with one of :data:`stamen.contract.protocol.UNLEARN_TRAIN_KEYS` are
unlearning rounds, per method (:func:`round_view` picks the data, :func:`unlearning_round`
the step where it is not local training):

- ``unlearn-retrain`` (retrain, finetune, federaser's calibration, laf+ft's fine-tuning):
  local training on the remaining subgraph;
- ``unlearn-laf`` (laf, laf+r, laf+ft): one LAF alternation on the graph as trained;
- ``unlearn-repair`` (laf+r): head repair on the remaining labelled data;
- ``unlearn-ascent`` (gradient-ascent): ascent on the forgotten nodes (the client's training
  nodes in this round are its forgotten nodes, so FedAvg weighs holders by them).
"""

from __future__ import annotations

import copy
import dataclasses

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from torch_geometric.data import Data

from stamen.client.job import OPTIMIZER_STATE, LocalJob, private_record, private_tensors
from stamen.client.weights import record_tensors
from stamen.contract import protocol as p
from stamen.contract.requests import Request, parse_request
from stamen.models import NodeClassifier
from stamen.models.object_cache import kept
from stamen.unlearn.baselines import gradient_ascent
from stamen.unlearn.evaluate import client_counts
from stamen.unlearn.laf import EmbeddingVAE, LAFConfig, laf_traced, repair_head
from stamen.unlearn.requests import client_forget_mask, remaining_view
from stamen.unlearn.wash import WashConfig, client_wash_statistics, head_matrix, keys, prediction_changes

ORIGINAL_MODEL = "unlearn-original-model"  # context.state: the weights LAF's first round received
LAF_VAES = "unlearn-laf-vaes"  # context.state: the VAEs LAF's first round fitted


def _request(job: LocalJob, text: str, num_partitions: int) -> Request:
    return parse_request(text, num_partitions, int(job.data.num_classes))


def _forget_and_remaining(job: LocalJob, request: Request) -> tuple[torch.Tensor, Data | None]:
    """This client's :math:`D_f` mask and what it keeps after ``request``, once per process, subgraph and request.

    A method's rounds and queries see the same view every time, so the structures built from
    its tensors (:mod:`stamen.models.sparse_product`) are built once too.
    """

    def build() -> tuple[torch.Tensor, Data | None]:
        forget = client_forget_mask(job.data, job.partition_id, request, job.config.seed)
        return forget, remaining_view(job.data, job.partition_id, request, forget)

    return kept(job.data, ("remaining", job.partition_id, str(request), job.config.seed), build)


def answer(job: LocalJob, message: Message, model: NodeClassifier, num_partitions: int) -> Message:
    """Reply to one unlearning query about ``model`` (the weights the query carried)."""
    config = message.content[p.CONFIG]
    kind = config[p.QUERY]
    request = _request(job, str(config[p.UNLEARN_REQUEST]), num_partitions)
    forget, remaining = _forget_and_remaining(job, request)
    model.eval()
    metrics: dict = {p.PARTITION_ID: job.partition_id}
    content = RecordDict()
    if kind == p.WASH_STATISTICS_QUERY:
        stats = client_wash_statistics(model, job.data, forget, remaining, request, WashConfig())
        content[p.WASH_STATISTICS] = ArrayRecord(
            {p.KEEP_GRAM: stats.keep, p.FORGET_GRAM: stats.forget, p.FORGET_CROSS: stats.cross}
        )
        metrics.update({p.NUM_KEEP: stats.num_keep, p.NUM_FORGET: stats.num_forget})
    elif kind == p.WASH_HELDOUT_QUERY:
        edits = record_tensors(message.content[p.WASH_EDITS])
        deltas = [edits[f"edit-{i}"] for i in range(len(edits))]
        if remaining is None:  # a departing client holds no remaining data to check
            changed, counted = [0] * len(deltas), 0
        else:
            with torch.no_grad():
                held_out = keys(model.encoder(remaining.x, remaining.edge_index))[remaining.val_mask].cpu()
            changed, counted = prediction_changes(head_matrix(model.head).cpu(), deltas, held_out, request.label)
        metrics.update({f"{p.CHANGED}-{i}": count for i, count in enumerate(changed)})
        metrics[p.COUNTED] = counted
    elif kind == p.UNLEARN_EVALUATE_QUERY:
        serving = remaining if remaining is not None else job.data
        metrics.update(client_counts(model, job.data, forget, serving, request, remaining is not None))
    else:
        raise ValueError(f"unknown unlearning query {kind!r}; this client answers {', '.join(p.UNLEARN_QUERIES)}")
    content[p.METRICS] = MetricRecord(metrics)
    return Message(content=content, reply_to=message)


def _flag(round_config: ConfigRecord) -> tuple[str, str]:
    """The round's unlearning flag and its request text."""
    for key in p.UNLEARN_TRAIN_KEYS:
        if key in round_config:
            return key, str(round_config[key])
    raise ValueError(f"not an unlearning round: none of {', '.join(p.UNLEARN_TRAIN_KEYS)} in its config")


def trains_locally(round_config: ConfigRecord) -> bool:
    """Whether an unlearning round's step is local training on its view (retraining, fine-tuning), not
    LAF, head repair or gradient ascent (:func:`unlearning_round` gives None for it)."""
    return _flag(round_config)[0] == p.UNLEARN_RETRAIN


def round_view(job: LocalJob, round_config: ConfigRecord, num_partitions: int, server_round: int) -> LocalJob:
    """The job an unlearning round sees.

    Retraining, fine-tuning and head repair see the client's subgraph without its data to
    forget (and their edges); in their first round the optimizer state of the original
    training is dropped, as they start afresh. Gradient ascent sees the graph as trained
    with its forgotten nodes as the training nodes; LAF the graph as trained.
    """
    flag, text = _flag(round_config)
    if flag == p.UNLEARN_LAF:
        return job
    request = _request(job, text, num_partitions)
    forget, remaining = _forget_and_remaining(job, request)
    if flag == p.UNLEARN_ASCENT:
        data = copy.copy(job.data)  # a new Data object sharing the tensors; only train_mask is replaced
        data.train_mask = forget
        return dataclasses.replace(job, data=data)
    if remaining is None:
        raise ValueError(f"client {job.partition_id} left with request {request} and takes no part in retraining")
    if server_round == 1 and OPTIMIZER_STATE in job.state:
        del job.state[OPTIMIZER_STATE]
    return dataclasses.replace(job, data=remaining)


def retraining_view(job: LocalJob, request_text: str, num_partitions: int, server_round: int) -> LocalJob:
    """The job retraining sees (:func:`round_view` of an ``unlearn-retrain`` round)."""
    return round_view(job, ConfigRecord({p.UNLEARN_RETRAIN: request_text}), num_partitions, server_round)


def unlearning_round(
    job: LocalJob, model: NodeClassifier, round_config: ConfigRecord, num_partitions: int, server_round: int
) -> tuple[NodeClassifier, float] | None:
    """The step of an unlearning round that is not local training (LAF, head repair, ascent) on
    the job of :func:`round_view`: the model and a loss (NaN: none, :data:`stamen.contract.protocol.UNLEARN_NO_LOSS`);
    ``None`` for local training."""
    flag, text = _flag(round_config)
    if flag == p.UNLEARN_LAF:
        return laf_round(job, model, text, num_partitions, server_round)
    if flag == p.UNLEARN_REPAIR:
        return repair_head(model, [job.data], epochs=5, lr=job.config.lr), float("nan")
    if flag == p.UNLEARN_ASCENT:
        data = copy.copy(job.data)
        data.forget_mask = job.data.train_mask
        return gradient_ascent(model, [data], lr=job.config.lr, seed=job.config.seed), float("nan")
    return None


def laf_round(
    job: LocalJob, model: NodeClassifier, request_text: str, num_partitions: int, server_round: int
) -> tuple[NodeClassifier, float]:
    """One federated LAF round on this client's graph as trained (:func:`stamen.unlearn.laf.laf`, one step).

    Only clients holding data to forget have forget terms; the others keep their remaining
    embeddings aligned. The first round's weights are the original model (kept in the
    client's state for the later rounds' VAEs and alignment). Returns the model and the
    extractor loss.
    """
    request = _request(job, request_text, num_partitions)
    if server_round == 1:
        job.state[ORIGINAL_MODEL] = private_record(model.state_dict())
        if LAF_VAES in job.state:
            del job.state[LAF_VAES]
    original = job.new_model()
    original.load_state_dict(private_tensors(job.state[ORIGINAL_MODEL]))
    data = copy.copy(job.data)
    data.forget_mask = _forget_and_remaining(job, request)[0]
    seed = job.config.seed * 1_009 + job.partition_id
    kept = _kept_vaes(job)
    result = laf_traced(model, [data], LAFConfig(steps=1), seed=seed, original=original, vaes=kept)
    if kept is None:
        _keep_vaes(job, result.vaes)
    return result.model, result.extractor_loss[-1]


def _keep_vaes(job: LocalJob, vaes: tuple) -> None:
    """The VAEs of LAF's first round, for its later rounds (they depend only on the original model)."""
    tensors = {
        f"{side}/{name}": value
        for side, vae in zip(("remaining", "forget"), vaes)
        if vae is not None
        for name, value in vae.state_dict().items()
    }
    job.state[LAF_VAES] = private_record(tensors)


def _kept_vaes(job: LocalJob) -> tuple | None:
    """The VAEs :func:`_keep_vaes` kept, rebuilt (None before LAF's first round)."""
    if LAF_VAES not in job.state:
        return None
    tensors = private_tensors(job.state[LAF_VAES])
    vaes = []
    for side in ("remaining", "forget"):
        state = {name.split("/", 1)[1]: value for name, value in tensors.items() if name.startswith(side + "/")}
        if not state:
            vaes.append(None)
            continue
        hidden, dim = state["encoder.0.weight"].shape
        vae = EmbeddingVAE(dim, latent=state["mu.weight"].shape[0], hidden=hidden)
        vae.load_state_dict(state)
        vae.eval()
        for parameter in vae.parameters():
            parameter.requires_grad_(False)
        vaes.append(vae)
    return vaes[0], vaes[1]
