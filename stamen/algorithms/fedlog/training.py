r"""FedLoG's local training on one client: the warm-up and the prototype epochs.

Plain functions on a :class:`stamen.algorithms.fedlog.model.FedLoGNet` and the client's subgraph; no
Flower here. A local epoch goes over the training nodes in shuffled mini-batches; on
each batch :math:`B` the loss is

.. math::
    \beta_{\mathrm{metric}}\, \mathcal{L}_{\mathrm{metric}}(B)
    + \beta_{\mathrm{norm}}\, \tfrac12 \big(\lVert \mathbf{S}^{h} \rVert + \lVert \mathbf{S}^{t} \rVert\big)
    + \beta_{\mathrm{cd}}\, \mathcal{L}_{\mathrm{cd}},

where :math:`\mathcal{L}_{\mathrm{metric}}` is the negative log-likelihood of the
degree-gated mixture of branch log-probabilities on the batch and
:math:`\mathcal{L}_{\mathrm{cd}}` the same loss (branches mixed half and half) on the
global synthetic nodes, after adaptive feature scaling and with a generated neighbour
each. After every batch the client's :math:`\lambda` moves with its accuracy on those
nodes (:func:`stamen.algorithms.fedlog.model.update_lambda`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from stamen.algorithms.fedlog.model import FedLoGNet, degree_gate, scale_features, update_lambda
from stamen.algorithms.fedlog.neighbour_generator import NeighbourGenerator, with_generated_neighbours
from stamen.models.training import adam


@dataclass(frozen=True)
class FedLoGHyper:
    """The loss weights and optimisation settings of a FedLoG client (run-config ``fedlog-*``,
    where their defaults live)."""

    lr: float
    weight_decay: float
    batch_size: int
    beta_metric: float
    beta_norm: float
    beta_cd: float
    lambda_step: float
    lambda_threshold: float


@dataclass
class GlobalSynthetic:
    """What the server condensed: global synthetic nodes, their labels, the per-class generators."""

    features: Tensor
    labels: Tensor
    generators: list[NeighbourGenerator]


def _batches(train_mask: Tensor, batch_size: int) -> list[Tensor]:
    nodes = torch.nonzero(train_mask).flatten()
    return list(nodes[torch.randperm(nodes.numel(), device=nodes.device)].split(batch_size))


@torch.no_grad()
def _accuracy(model: nn.Module, data: Data, mask: Tensor) -> float:
    model.eval()
    predicted = model.classifier(model.encoder(data.x, data.edge_index)).argmax(-1)
    return float((predicted[mask] == data.y[mask]).float().mean()) if mask.any() else 0.0


def warm_up(
    model: FedLoGNet,
    data: Data,
    hyper: FedLoGHyper,
    epochs: int,
    patience: int,
    on_test: bool = False,
) -> int:
    """Cross-entropy training of the encoder and the linear classifier, early-stopped; returns the epochs run.

    By default it stops after ``patience`` epochs without a validation accuracy at least the best and keeps the
    weights of the best validation epoch; it never looks at test nodes. ``on_test`` (``fedlog-warmup-stop=
    'test-mask'``) is the FedLoG authors' code (``Client.pretrain`` of their ``model/client.py``): the same rule on
    the *test* nodes (test labels decide when the warm-up ends), keeping the last epoch's weights, from which their
    client trains on.
    """
    parameters = [*model.encoder.parameters(), *model.classifier.parameters()]
    optimizer = adam(parameters, hyper.lr, hyper.weight_decay)
    mask = data.test_mask if on_test else data.val_mask
    best, best_state, waited, ran = -1.0, None, 0, 0
    while ran < epochs and waited < patience:
        ran += 1
        model.train()
        for batch in _batches(data.train_mask, hyper.batch_size):
            optimizer.zero_grad()
            logits = model.classifier(model.encoder(data.x, data.edge_index)[batch])
            nn.functional.cross_entropy(logits, data.y[batch]).backward()
            optimizer.step()
        accuracy = _accuracy(model, data, mask)
        if accuracy >= best:
            best, waited = accuracy, 0
            if not on_test:
                best_state = copy.deepcopy(model.state_dict())
        else:
            waited += 1
    if best_state is not None:
        model.load_state_dict(best_state)
    return ran


def synthetic_data_loss(
    model: FedLoGNet, prototypes: tuple[Tensor, Tensor], synthetic: GlobalSynthetic, lam: Tensor
) -> tuple[Tensor, Tensor]:
    """The loss on the scaled global synthetic nodes (with generated neighbours) and their predictions."""
    scaled = scale_features(synthetic.features, synthetic.labels, lam)
    x, edge_index = with_generated_neighbours(scaled, synthetic.labels, synthetic.generators)
    embeddings = model.encoder(x, edge_index)[0::2]
    head, tail = model.branch_log_probs(embeddings, prototypes)
    mixed = 0.5 * head + 0.5 * tail
    return nn.functional.nll_loss(mixed, synthetic.labels), mixed.argmax(-1)


def local_epochs(
    model: FedLoGNet,
    data: Data,
    hyper: FedLoGHyper,
    epochs: int,
    lam: Tensor,
    synthetic: GlobalSynthetic | None,
) -> tuple[float, Tensor]:
    """``epochs`` FedLoG epochs; returns the mean batch loss and the updated per-class lambda.

    Without ``synthetic`` (the first round) or with ``beta_cd = 0`` the synthetic-data
    loss is left out.
    """
    weights = [p for name, p in model.named_parameters() if not name.startswith("synthetic_")]
    optimizer = adam(weights, hyper.lr, hyper.weight_decay)
    synthetic_optimizer = adam([model.synthetic_head, model.synthetic_tail], hyper.lr)
    alpha = degree_gate(data.edge_index, data.num_nodes, model.gamma).unsqueeze(1)
    use_synthetic = synthetic is not None and hyper.beta_cd > 0
    losses = []
    model.train()
    for _ in range(epochs):
        for batch in _batches(data.train_mask, hyper.batch_size):
            optimizer.zero_grad()
            synthetic_optimizer.zero_grad()
            prototypes = model.prototypes()
            head, tail = model.branch_log_probs(model.encoder(data.x, data.edge_index)[batch], prototypes)
            mixed = alpha[batch] * head + (1 - alpha[batch]) * tail
            loss = hyper.beta_metric * nn.functional.nll_loss(mixed, data.y[batch])
            norm = 0.5 * (model.synthetic_head.norm() + model.synthetic_tail.norm())
            loss = loss + hyper.beta_norm * norm
            if use_synthetic:
                cd_loss, predicted = synthetic_data_loss(model, prototypes, synthetic, lam)
                loss = loss + hyper.beta_cd * cd_loss
                lam = update_lambda(lam, predicted, synthetic.labels, hyper.lambda_step, hyper.lambda_threshold)
            loss.backward()
            optimizer.step()
            synthetic_optimizer.step()
            losses.append(float(loss.detach()))
    return (sum(losses) / len(losses) if losses else 0.0), lam
