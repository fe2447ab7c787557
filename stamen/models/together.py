r"""Several clients trained together: their subgraphs as one block-diagonal graph, each with its own weights.

Client :math:`c` holds features :math:`\mathbf{X}_c` and an adjacency :math:`\hat{\mathbf{A}}_c`
(GCN's normalised one, or GraphSAGE's mean) and trains its own weights
:math:`\boldsymbol{\theta}_c` on its own loss :math:`L_c`. Stacking the clients' nodes gives

.. math::
    \hat{\mathbf{A}} = \operatorname{diag}(\hat{\mathbf{A}}_1, \dots, \hat{\mathbf{A}}_C), \qquad
    L = \sum_c L_c(\boldsymbol{\theta}_c), \qquad
    \frac{\partial L}{\partial \boldsymbol{\theta}_c} = \frac{\partial L_c}{\partial \boldsymbol{\theta}_c},

so one forward and backward pass over the block-diagonal graph gives every client its own
gradient, and one fused Adam step over all clients' weights takes each client's own step.
Per-op costs are paid once per round instead of once per client: the aggregation over the
block-diagonal adjacency, activations, dropout masks, the backward pass and the optimizer
step. Products with a client's own weights (:math:`\mathbf{X}_c\mathbf{W}_c^{\top}`, the
head) run per client, on the client's rows.

The numbers are the sequential ones (:func:`stamen.models.training.fit` on each client in turn) to
the bit, and the tests check it:

- every product with a client's weights is the same operation on the same operands;
- a row of :math:`\hat{\mathbf{A}}\mathbf{H}` sums the same entries of its client's block in the
  same order as :math:`\hat{\mathbf{A}}_c\mathbf{H}_c`;
- each client draws its dropout masks from a generator of its own, seeded as the sequential
  handler seeds torch's, in the same order and with the same operation as
  :func:`torch.nn.functional.dropout` on a CPU (a mask of ``bernoulli_(1 - p)`` scaled by
  ``1 / (1 - p)``);
- :math:`\partial L/\partial L_c = 1`, so each client's backward pass is its own.

Models: the node classifiers whose layers are :class:`~stamen.models.sparse_layers.GCNLayer`,
:class:`~stamen.models.sparse_layers.SAGELayer` or :class:`~stamen.models.sparse_layers.LinearLayer`
(GCN, GraphSAGE, MLP, SGC), without hooks, on a CPU (a GPU's dropout draws differently).
:func:`trains_together` says whether a model is one. Such a classifier on a graph mended by
a frozen generator (FedSage's, an :class:`~stamen.models.derived_graph.OnDerivedGraph`) trains together
too: a client's block is then its mended graph (:func:`computed_graph`: its own rows, then
the generated ones), and its loss and figures read the logits of its own rows, as
the mended classifier's forward pass returns them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor
from torch.nn import functional as F
from torch_geometric.data import Data

from stamen.models.derived_graph import OnDerivedGraph
from stamen.models.feature_dropout import dropout_mask_
from stamen.models.node_classifier import Encoder, GCNPropagation, NodeClassifier, SAGEReadout
from stamen.models.object_cache import kept_all
from stamen.models.sparse_layers import GCNLayer, LinearLayer, SAGELayer
from stamen.models.sparse_product import SparseMatrix, SparsePattern, gcn_adjacency, mean_adjacency
from stamen.models.stacked_rows import StackedRows
from stamen.models.training import Evaluation, evaluation_of, local_loss

Weights = dict[str, Tensor]
"""One client's parameters by the model's parameter names."""

_LAYERS = (GCNLayer, SAGELayer, LinearLayer)
_FINALS = (GCNPropagation, SAGEReadout)


def trains_together(model: torch.nn.Module, device: torch.device) -> bool:
    """Whether :func:`fit_together` trains ``model`` (or the classifier of a mended one) on ``device`` (see the
    module docstring)."""
    if isinstance(model, OnDerivedGraph):
        if model._forward_hooks or model._forward_pre_hooks or model._backward_hooks:
            return False
        model = model.classifier
    encoder = getattr(model, "encoder", None)
    if device.type != "cpu" or type(model) is not NodeClassifier or type(encoder) is not Encoder:
        return False
    if not all(type(layer) in _LAYERS for layer in encoder.layers):
        return False
    if encoder.final is not None and type(encoder.final) not in _FINALS:
        return False
    return not any(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks for m in model.modules())


Graph = tuple[Tensor | StackedRows, Tensor]
"""A graph a classifier computes on: node features and ``edge_index``."""


def trained_module(model: torch.nn.Module) -> torch.nn.Module:
    """The module whose weights a client trains and sends: a derived-graph model's classifier, else ``model``."""
    return model.classifier if isinstance(model, OnDerivedGraph) else model


def computed_graph(model: torch.nn.Module, data: Data) -> Graph:
    """The graph ``model`` computes on for ``data``: its derived graph (FedSage's mended one), else ``data``'s own."""
    if isinstance(model, OnDerivedGraph):
        return model.derived(data.x, data.edge_index)
    return data.x, data.edge_index


class ClientBlock:
    """Clients' subgraphs side by side: their node counts and block-diagonal adjacencies (built when first used).

    ``datas`` give the labels and masks of each client's nodes; ``graphs`` (default: the
    datas' own) what each client's classifier computes on, whose first rows are those nodes.
    """

    def __init__(self, datas: Sequence[Data], graphs: Sequence[Graph] | None = None) -> None:
        self.datas = tuple(datas)
        self.outputs = [int(data.num_nodes) for data in self.datas]
        if graphs is None:
            self.graphs: tuple[Graph, ...] = tuple((data.x, data.edge_index) for data in self.datas)
            self.sizes = list(self.outputs)
        else:
            self.graphs = tuple(graphs)
            self.sizes = [int(x.size(0)) for x, _ in self.graphs]

    def gcn(self, dtype: torch.dtype) -> SparseMatrix:
        r""":math:`\operatorname{diag}(\hat{\mathbf{A}}_c)` with GCN's normalisation."""
        return _kept_block([gcn_adjacency(edges, n, dtype) for (_, edges), n in zip(self.graphs, self.sizes)])

    def mean(self, dtype: torch.dtype) -> SparseMatrix:
        r""":math:`\operatorname{diag}(\mathbf{M}_c)`, GraphSAGE's mean over in-neighbours."""
        return _kept_block([mean_adjacency(edges, n, dtype) for (_, edges), n in zip(self.graphs, self.sizes)])


def _kept_block(blocks: list[SparseMatrix]) -> SparseMatrix:
    """The block-diagonal matrix of ``blocks``, built once while they all live."""
    return kept_all(blocks, "block-diagonal", lambda: _one_after_another(blocks, diagonal=True))


def _one_after_another(parts: Sequence[SparseMatrix], diagonal: bool) -> SparseMatrix:
    """The sparse matrices' rows one after another, their columns shifted as well (``diagonal``) or shared."""
    offsets = torch.tensor([0] + [part.size(0) for part in parts]).cumsum(0).tolist()
    rows = torch.cat([part.pattern.rows + offset for part, offset in zip(parts, offsets)])
    cols = torch.cat([part.pattern.cols + (offset if diagonal else 0) for part, offset in zip(parts, offsets)])
    shape = (offsets[-1], offsets[-1] if diagonal else parts[0].size(1))
    return SparsePattern.of(rows, cols, shape).with_values(torch.cat([part.values for part in parts]))


def _dropout(x: Tensor, sizes: list[int], p: float, generators: Sequence[torch.Generator]) -> Tensor:
    """Dropout on the stacked rows of the clients, each client's mask from its own generator."""
    if p == 0.0:
        return x
    noise = torch.empty_like(x)
    for part, generator in zip(noise.split(sizes), generators):
        dropout_mask_(part, p, generator)
    return x * noise


def _projected(inputs: Sequence[Tensor | SparseMatrix | StackedRows], weights: Sequence[Weights], key: str) -> Tensor:
    r"""The clients' :math:`\mathbf{X}_c\mathbf{W}_c^{\top}`, stacked; one sparse product over all their rows
    when they share one weight matrix (an evaluation of the global model): row by row the same sums."""
    if len(inputs) > 1 and all(w is weights[0] for w in weights):
        if all(isinstance(x, SparseMatrix) for x in inputs):
            return kept_all(inputs, "stacked", lambda: _one_after_another(inputs, diagonal=False)) @ weights[0][key].t()
    return torch.cat([x @ w[key].t() for x, w in zip(inputs, weights)])


def _rows(weights: Sequence[Weights], key: str, sizes: list[int]) -> Tensor:
    """Each client's vector ``key`` repeated over its rows, stacked: a bias to add to the clients' rows."""
    return torch.cat([w[key].expand(n, -1) for w, n in zip(weights, sizes)])


def _layer(
    layer: torch.nn.Module,
    name: str,
    inputs: Sequence[Tensor | SparseMatrix | StackedRows],
    weights: Sequence[Weights],
    block: ClientBlock,
) -> Tensor:
    """One layer for every client (its own weights on its own rows), as the layer's ``forward``."""
    if isinstance(layer, GCNLayer):
        projected = _projected(inputs, weights, f"{name}.lin.weight")
        out = block.gcn(projected.dtype) @ projected
        return out + _rows(weights, f"{name}.bias", block.sizes)
    if isinstance(layer, SAGELayer):
        neighbours = _projected(inputs, weights, f"{name}.lin_l.weight")
        roots = _projected(inputs, weights, f"{name}.lin_r.weight").split(block.sizes)
        out = block.mean(neighbours.dtype) @ neighbours
        return torch.cat([o + w[f"{name}.lin_l.bias"] + r for o, w, r in zip(out.split(block.sizes), weights, roots)])
    outs = []  # LinearLayer
    for x, w in zip(inputs, weights):
        if not isinstance(x, Tensor):  # sparse, or a mended graph's two blocks
            outs.append(x @ w[f"{name}.weight"].t() + w[f"{name}.bias"])
        else:
            outs.append(F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"]))
    return torch.cat(outs)


def forward_together(
    model: NodeClassifier,
    weights: Sequence[Weights],
    block: ClientBlock,
    generators: Sequence[torch.Generator],
    training: bool,
) -> list[Tensor]:
    """Each client's logits from its own ``weights`` on its own subgraph: ``model``'s forward, clients together
    (``generators``: each client's dropout draws; unused without training). ``model``: the classifier (a mended
    classifier's, whose graphs ``block`` holds); the logits are those of each client's own nodes."""
    encoder: Encoder = model.encoder
    p = encoder.dropout if training else 0.0
    draws = generators if training else [None] * len(block.datas)
    inputs = [encoder.first_input(x, training, g) for (x, _), g in zip(block.graphs, draws)]
    x: Tensor | None = None
    for index, layer in enumerate(encoder.layers):
        if index > 0:
            inputs = list(_dropout(x, block.sizes, p, generators).split(block.sizes))
        x = torch.relu(_layer(layer, f"encoder.layers.{index}", inputs, weights, block))
    if encoder.layers:
        x = _dropout(x, block.sizes, p, generators)
    else:
        x = torch.cat(inputs)
    if isinstance(encoder.final, GCNPropagation):
        adjacency = block.gcn(x.dtype)
        for _ in range(encoder.final.hops):
            x = adjacency @ x
    elif isinstance(encoder.final, SAGEReadout):
        x = torch.cat([x, block.mean(x.dtype) @ x], dim=-1)
    heads = zip(x.split(block.sizes), weights, block.outputs)  # the head over all rows, as the mended forward pass
    return [F.linear(h, w["head.weight"], w["head.bias"])[:n] for h, w, n in heads]


@torch.no_grad()
def evaluate_together(model: NodeClassifier, weights: Sequence[Weights], block: ClientBlock) -> list[Evaluation]:
    """:func:`stamen.models.training.evaluate` of each client's ``weights`` on its subgraph, at once (for subgraphs
    whose whole graph is their training graph, :func:`~stamen.models.training.one_graph`, and no new client)."""
    logits = forward_together(model, weights, block, [], training=False)
    evaluations = []
    for out, data in zip(logits, block.datas):
        hits = out.argmax(dim=-1) == data.y
        evaluations.append(evaluation_of(hits, data, hits))
    return evaluations


def fit_together(
    model: NodeClassifier,
    weights: Sequence[Weights],
    block: ClientBlock,
    epochs: int,
    optimizer: torch.optim.Optimizer,
    generators: Sequence[torch.Generator],
    proximal_mu: float = 0.0,
) -> list[float]:
    """:func:`stamen.models.training.fit` for every client at once; each client's mean loss.

    Args:
        model: the architecture (its own weights are not used).
        weights: per client, leaf tensors that require a gradient, by ``model``'s parameter names.
        block: the clients' subgraphs, in the order of ``weights``.
        epochs: full-batch steps.
        optimizer: over every client's weights (a fused Adam steps each tensor on its own).
        generators: per client, the generator its dropout masks come from.
        proximal_mu: FedProx's proximal strength, each client around its weights on entry.
    """
    anchors = [[w.detach().clone() for w in own.values()] if proximal_mu > 0 else [] for own in weights]
    totals = [0.0] * len(weights)
    for _ in range(epochs):
        optimizer.zero_grad()
        logits = forward_together(model, weights, block, generators, training=True)
        losses = [
            local_loss(out, data, list(own.values()), anchor, proximal_mu)
            for out, data, own, anchor in zip(logits, block.datas, weights, anchors)
        ]
        torch.stack(losses).sum().backward()
        optimizer.step()
        for i, loss in enumerate(losses):
            totals[i] += float(loss.detach())
    return [total / epochs for total in totals]
