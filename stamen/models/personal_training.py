r"""Local training steps of personalised FL on the encoder -> head split of :mod:`stamen.models.node_classifier`.

Plain functions on a :class:`~stamen.models.node_classifier.NodeClassifier` and a client subgraph;
no Flower here. The split into the shared and the personal part is by the model's
modules: every parameter of ``model.encoder`` (state-dict keys ``encoder.*``) and of
``model.head`` (keys ``head.*``).

**FedRep** (Collins, Hassani, Mokhtari, Shakkottai: *Exploiting Shared Representations for
Personalized Federated Learning*, ICML 2021): a client first fits its head :math:`h_i` with
the received representation :math:`\phi` fixed, then the representation with its new head
fixed:

.. math::
    h_i \leftarrow h_i - \eta \nabla_{h} \ell_i(\phi, h_i)\ (\tau_h \text{ steps}), \qquad
    \phi \leftarrow \phi - \eta \nabla_{\phi} \ell_i(\phi, h_i)\ (\tau_\phi \text{ steps}).

:func:`fit_part` trains one part with the other frozen: the frozen parameters get no
gradient at all (``requires_grad`` off), so Adam neither steps nor decays them, and
their values are bit-for-bit those on entry.

**Ditto** (Li, Hu, Beirami, Smith: *Ditto: Fair and Robust Federated Learning Through
Personalization*, ICML 2021): besides the global model :math:`w` (trained as FedAvg), each
client keeps a personal model :math:`v_i` minimising

.. math::
    F_i(v_i) + \frac{\lambda}{2} \lVert v_i - w^t \rVert^2

around the global model :math:`w^t` it received. :func:`fit_personal` takes an Adam step
:math:`u` on the cross-entropy :math:`F_i`, then applies the regulariser through its exact
proximal map with the step size :math:`\eta` (the learning rate),

.. math::
    v_i \leftarrow \operatorname{prox}_{\eta\frac{\lambda}{2}\lVert\cdot - w^t\rVert^2}(u)
    = \frac{u + \eta\lambda\, w^t}{1 + \eta\lambda}
    = u + \frac{\eta\lambda}{1 + \eta\lambda}(w^t - u),

decoupled from Adam's gradient normalisation as AdamW decouples weight decay. To first order
in :math:`\eta\lambda` this is the paper's gradient step on the regulariser; unlike that step
it is stable for every :math:`\lambda \ge 0`: :math:`\lambda = 0` is plain local training
(:func:`stamen.models.training.fit`, step for step) and :math:`\lambda \to \infty` pins
:math:`v_i` to :math:`w^t` (the distance shrinks by :math:`1/(1+\eta\lambda)` per step).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from stamen.models.node_classifier import NodeClassifier

ENCODER, HEAD = "encoder.", "head."  # state-dict key prefixes of the two parts


def part_state(model: NodeClassifier, prefix: str) -> dict[str, Tensor]:
    """The state-dict entries of one part (``ENCODER`` or ``HEAD``), detached."""
    return {key: value.detach() for key, value in model.state_dict().items() if key.startswith(prefix)}


def load_part(model: NodeClassifier, state: dict[str, Tensor], prefix: str) -> None:
    """Load one part's weights into ``model``; ValueError unless ``state`` holds exactly that part's keys."""
    expected = set(part_state(model, prefix))
    if set(state) != expected:
        extra, missing = sorted(set(state) - expected), sorted(expected - set(state))
        raise ValueError(f"the {prefix[:-1]} weights do not fit the model: extra {extra}, missing {missing}")
    model.load_state_dict(state, strict=False)


@contextlib.contextmanager
def frozen(module: nn.Module) -> Iterator[None]:
    """Within the block, ``module``'s parameters take no gradient (restored afterwards)."""
    saved = [(param, param.requires_grad) for param in module.parameters()]
    for param, _ in saved:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param, flag in saved:
            param.requires_grad_(flag)


def _cross_entropy(model: nn.Module, data: Data) -> Tensor:
    logits = model(data.x, data.edge_index)
    return nn.functional.cross_entropy(logits[data.train_mask], data.y[data.train_mask])


def fit_part(
    model: NodeClassifier, data: Data, epochs: int, optimizer: torch.optim.Optimizer, train: nn.Module
) -> float:
    """``epochs`` full-batch steps on the training nodes that move only ``train`` (``model.encoder`` or
    ``model.head``); the rest of the model stays frozen. Returns the mean loss (0.0 for no epochs)."""
    if epochs == 0:
        return 0.0
    if train is not model.encoder and train is not model.head:
        raise ValueError("fit_part trains model.encoder or model.head")
    others = model.head if train is model.encoder else model.encoder
    model.train()
    total = 0.0
    with frozen(others):
        for _ in range(epochs):
            optimizer.zero_grad(set_to_none=True)  # frozen parameters keep no gradient: Adam skips them
            loss = _cross_entropy(model, data)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
    return total / epochs


def fit_personal(
    model: NodeClassifier,
    data: Data,
    epochs: int,
    optimizer: torch.optim.Optimizer,
    anchor: list[Tensor],
    lam: float,
) -> tuple[float, float]:
    r"""Ditto's personal update: ``epochs`` Adam steps on the cross-entropy, each followed by the
    proximal map of :math:`\frac{\lambda}{2}\lVert v - w \rVert^2` (module docstring).

    ``anchor`` holds the global weights :math:`w`, one tensor per ``model.parameters()`` in order.
    Returns the means over the steps' starts of the task loss :math:`F_i(v)` and of the regulariser
    :math:`\frac{\lambda}{2}\lVert v - w\rVert^2`, apart (their sum is the objective).
    """
    params = list(model.parameters())
    if len(anchor) != len(params) or any(a.shape != p.shape for a, p in zip(anchor, params)):
        raise ValueError("the anchor does not match the model's parameters")
    by_param = {id(param): target for param, target in zip(params, anchor)}
    model.train()
    total, pulled = 0.0, 0.0
    for _ in range(epochs):
        if lam > 0:  # the regulariser's value at the step's start
            pulled += 0.5 * lam * sum(float((p.detach() - a).pow(2).sum()) for p, a in zip(params, anchor))
        optimizer.zero_grad()
        loss = _cross_entropy(model, data)
        loss.backward()
        optimizer.step()
        if lam > 0:
            with torch.no_grad():
                for group in optimizer.param_groups:
                    pull = group["lr"] * lam / (1.0 + group["lr"] * lam)
                    for param in group["params"]:
                        param.add_(by_param[id(param)] - param, alpha=pull)
        total += float(loss.detach())
    return total / epochs, pulled / epochs
