"""A client's part in federated unlearning: statistics, counts and retraining, never node rows.

The client works out its own share of the request from the request alone
(:func:`unlearn.requests.client_forget_mask`, :func:`~unlearn.requests.remaining_view`)
and answers three queries (names in :mod:`contract.protocol`):

- ``wash-statistics``: :math:`\\mathbf{C}_i` (``d x d``) over its remaining training nodes and,
  where it holds data to forget, :math:`\\mathbf{K}_f^\\top\\mathbf{K}_f` (``d x d``) and
  :math:`\\mathbf{K}_f^\\top\\mathbf{R}` (``d x C``) (:func:`unlearn.wash.client_wash_statistics`);
- ``wash-heldout``: for each candidate edit, how many of its validation predictions change
  (:func:`unlearn.wash.prediction_changes`), two counts;
- ``unlearn-evaluate``: correct and total counts on :math:`D_r`, :math:`D_f` and its test nodes
  (:func:`unlearn.evaluate.client_counts`).

Training messages flagged ``unlearn-retrain`` train on the remaining subgraph
(:func:`retraining_view`), for the server's fallback to retraining.
"""

from __future__ import annotations

import dataclasses

import torch
from flwr.app import ArrayRecord, Message, MetricRecord, RecordDict

from client.job import OPTIMIZER_STATE, LocalJob
from models import NodeClassifier
from contract import protocol as p
from unlearn.evaluate import client_counts
from unlearn.requests import Request, client_forget_mask, parse_request, remaining_view
from unlearn.wash import WashConfig, client_wash_statistics, head_matrix, keys, prediction_changes


def _request(job: LocalJob, text: str, num_partitions: int) -> Request:
    return parse_request(text, num_partitions, int(job.data.num_classes))


def answer(job: LocalJob, message: Message, model: NodeClassifier, num_partitions: int) -> Message:
    """Reply to one unlearning query about ``model`` (the weights the query carried)."""
    config = message.content[p.CONFIG]
    kind = config[p.QUERY]
    request = _request(job, str(config[p.UNLEARN_REQUEST]), num_partitions)
    forget = client_forget_mask(job.data, job.partition_id, request, job.config.seed)
    remaining = remaining_view(job.data, job.partition_id, request, forget)
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
        edits = message.content[p.WASH_EDITS].to_torch_state_dict()
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


def retraining_view(job: LocalJob, request_text: str, num_partitions: int, server_round: int) -> LocalJob:
    """The job retraining sees: the client's subgraph without its data to forget (and their edges).

    Retraining starts from scratch, so in its first round the optimizer state of the
    original training is dropped.
    """
    request = _request(job, request_text, num_partitions)
    forget = client_forget_mask(job.data, job.partition_id, request, job.config.seed)
    remaining = remaining_view(job.data, job.partition_id, request, forget)
    if remaining is None:
        raise ValueError(f"client {job.partition_id} left with request {request} and takes no part in retraining")
    if server_round == 1 and OPTIMIZER_STATE in job.state:
        del job.state[OPTIMIZER_STATE]
    return dataclasses.replace(job, data=remaining)


ORIGINAL_MODEL = "unlearn-original-model"  # context.state: the weights LAF's first round received


def laf_round(
    job: LocalJob, model: NodeClassifier, request_text: str, num_partitions: int, server_round: int
) -> tuple[NodeClassifier, float]:
    """One federated LAF round on this client's graph as trained (:func:`unlearn.laf.laf`, one step).

    Only clients holding data to forget have forget terms; the others keep their remaining
    embeddings aligned. The first round's weights are the original model (kept in the
    client's state for the later rounds' VAEs and alignment). Returns the model and the
    extractor loss.
    """
    from unlearn.laf import LAFConfig, laf

    request = _request(job, request_text, num_partitions)
    if server_round == 1:
        job.state[ORIGINAL_MODEL] = ArrayRecord(model.state_dict())
    original = job.new_model()
    original.load_state_dict(job.state[ORIGINAL_MODEL].to_torch_state_dict())
    data = job.data.clone()
    data.forget_mask = client_forget_mask(job.data, job.partition_id, request, job.config.seed)
    config = LAFConfig(steps=1)
    unlearned = laf(model, [data], config, seed=job.config.seed * 1_009 + job.partition_id, original=original)
    return unlearned, float(config.info["extractor_loss"][-1])
