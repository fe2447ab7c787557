r"""FedSage and FedSage+'s math: NeighGen, the impaired subgraph, the cross-client loss, graph mending.

Zhang, Yang, Li, Sun and Yiu, *Subgraph Federated Learning with Missing Neighbor
Generation*, NeurIPS 2021. The client parts are :mod:`stamen.algorithms.fedsage.client` (``fedsage-local``
and ``fedsage+``), the server parts :mod:`stamen.algorithms.fedsage.server`.

**NeighGen on the impaired subgraph.** A client cannot see the edges that leave its
subgraph, so it learns to generate them: it hides a share :math:`h` of its own nodes
(the *impaired* subgraph :math:`\bar G`, :class:`Impaired`) and learns, for every
remaining node :math:`v`, how many neighbours it lost,
:math:`n_v = |N_G(v) \setminus N_{\bar G}(v)|`, and their features
:math:`\{\mathbf{x}_u\}_{u \in N_G(v) \setminus N_{\bar G}(v)}`.

NeighGen (:class:`NeighGen`) is an encoder and two heads:

- encoder :math:`\mathbf{z}_v = H^e(\bar G)_v`: two GraphSAGE layers (mean
  aggregator) over :math:`[\mathbf{x}_v \,\|\, \log(1 + \bar d_v)]`;
- dGen :math:`\hat n_v = \mathrm{ReLU}(\mathbf{w}_d^\top \mathbf{z}_v + b_d)`;
- fGen :math:`\hat{\mathbf{X}}_v = H^f(\mathbf{z}_v + \boldsymbol{\epsilon})
  \in \mathbb{R}^{P \times F}`, :math:`\boldsymbol{\epsilon} \sim \mathcal{N}(0, \mathbf{I})`
  while training, an MLP to :math:`P` (``max_pred``) feature slots,

trained with :math:`\mathcal{L} = \lambda_d \mathcal{L}_d + \lambda_f \mathcal{L}_f`:

.. math::
    \mathcal{L}_d = \frac{1}{|\bar V|} \sum_{v} \mathrm{SmoothL1}(\hat n_v, n_v), \qquad
    \mathcal{L}_f = \frac{1}{|\bar V|} \sum_{v} \frac{1}{k_v} \sum_{p < k_v}
      \min_{u \in N_G(v) \setminus N_{\bar G}(v)} \lVert \hat{\mathbf{X}}_{v,p} - \mathbf{x}_u \rVert^2 / F,

with :math:`k_v = \min(n_v, P)` (the paper's greedy matching loss, :func:`matching_loss`;
nodes that lost no neighbour add no feature term). Differences from the paper, on purpose:

- the slots matched are the first :math:`\min(n_v, P)` by the *true* count rather
  than the predicted one, so fGen learns from the first epoch on, before dGen does;
- the encoder also sees :math:`\log(1 + \bar d_v)`: a mean aggregator alone cannot
  see a node's degree, and the number of lost neighbours grows with it;
- fGen's output has no ``tanh`` (Stamen's features are not scaled into [-1, 1]);
- the classifier's loss :math:`\mathcal{L}_c` on the mended impaired graph (the
  paper trains NeighGen jointly with it) is left out; the classifier is trained
  afterwards on the mended graph (below).

:func:`train_neighgen` is full-batch Adam, one :func:`local_gradients` per epoch; with
a ``seed`` every epoch's draws (dropout, the noise :math:`\boldsymbol{\epsilon}`) come
from :func:`epoch_seed`, so FedSage+ (one epoch per message exchange) repeats them.
With ``fedsage-local`` each client's NeighGen learns from its own subgraph only.

**FedSage+'s cross-client feature matching.** A client's missing neighbours mostly live
in *other* clients' subgraphs, so FedSage+ trains client :math:`i`'s generator also to
produce features that look like the nodes of every other client :math:`j`, without
client :math:`j`'s features ever leaving it. The paper's feature loss for client :math:`i` is

.. math::
    \mathcal{L}^f_i = \frac{1}{|\bar V_i|} \sum_{v \in \bar V_i} \sum_{p} \Big(
      \min_{u \in N_{G_i}(v) \cap V^h_i} \lVert H^f_i(\mathbf{z}_v)_p - \mathbf{x}_u \rVert^2
      + \alpha \sum_{j \neq i} \min_{u \in V_j} \lVert H^f_i(\mathbf{z}_v)_p - \mathbf{x}^j_u \rVert^2 \Big).

What is implemented: client :math:`i`'s step :math:`t` minimises
:math:`\lambda_d \mathcal{L}_d + \lambda_f \mathcal{L}_f + \alpha \sum_{j \neq i} \mathcal{L}^{i,j}_f` with

.. math::
    \mathcal{L}^{i,j}_f(\boldsymbol{\theta}^f_i) = \frac{1}{|A_i|} \sum_{v \in A_i} \frac{1}{k_v}
      \sum_{p < k_v} \min_{u \in V_j} \lVert H^f(\mathbf{h}_v; \boldsymbol{\theta}^f_i)_p - \mathbf{x}^j_u \rVert^2 / F,

where :math:`\mathbf{h}_v = \mathbf{z}_v + \boldsymbol{\epsilon}_v` is fGen's input
(encoder output plus the step's noise), :math:`k_v = \min(n_v, P)` and
:math:`A_i = \{v : k_v > 0\}`: the same nodes, slots and normalisation as the local
:math:`\mathcal{L}_f`, with the nearest of *all* of client :math:`j`'s nodes
:math:`V_j` as target. :math:`\alpha` is
``fedsage-cross-weight``; :math:`\alpha = 0` is exactly local NeighGen. As in the paper's
protocol, client :math:`j` differentiates with respect to fGen's weights
:math:`\boldsymbol{\theta}^f_i` only (:mod:`stamen.algorithms.fedsage.cross`): the encoder learns from
the local terms, and :math:`\mathbf{h}_v` is a constant of the step.

Messages of one step (two hops through the server; :mod:`stamen.algorithms.fedsage.client`,
:mod:`stamen.algorithms.fedsage.server`, the ``FEDSAGE_*`` names of :mod:`stamen.contract.protocol`):

1. :math:`i \to` server: :math:`\{\mathbf{h}_v, k_v\}_{v \in A_i}`,
   :math:`\boldsymbol{\theta}^f_i` and, from them, :math:`\mathbf{W}_p^\top\mathbf{W}_p` per slot
   (no feature of any node);
2. server :math:`\to j`: every other client's request;
3. :math:`j \to` server: the parts of :math:`\mathbf{g}_{i,j} = \nabla_{\boldsymbol{\theta}^f_i}
   \mathcal{L}^{i,j}_f` for each :math:`i \neq j`, computed on :math:`j`'s own features
   (:func:`stamen.algorithms.fedsage.cross.cross_parts`);
4. server :math:`\to i`: the parts summed over :math:`j \neq i` (in partition order); :math:`i`
   completes them to :math:`\mathbf{G}_i = \sum_{j \neq i} \mathbf{g}_{i,j}`
   (:func:`stamen.algorithms.fedsage.cross.complete_gradients`) and takes one Adam step on
   :math:`\nabla(\lambda_d \mathcal{L}_d + \lambda_f \mathcal{L}_f) + \alpha \mathbf{G}_i`.

Client :math:`j`'s features leave it only inside the parts of :math:`\mathbf{g}_{i,j}` that
depend on them, sums over :math:`A_i`'s slots, as the paper's gradient does (the other
parts follow from :math:`i`'s request and the run's seed). That is no formal privacy
guarantee: the last layer's bias gradient is a weighted sum of the matched features, which
gives a feature away when :math:`|A_i|` is one node with one slot. An Adam step spans
messages, so its moments wait in the client's state between them
(:func:`stamen.models.training.adam_state_record`).

**Graph mending.** With a trained NeighGen a client predicts for each node :math:`v` of
its subgraph a number of missing neighbours :math:`k_v = \min(\mathrm{round}(\hat n_v), P)`
and their features :math:`\hat{\mathbf{X}}_{v,0..k_v-1}`, and adds them as new nodes
joined to :math:`v` by an edge each way (:func:`mend`). The node classifier (GraphSAGE
in the paper) is trained and evaluated on the mended graph; only the original nodes
carry labels and predictions. :class:`MendedClassifier` does the mending inside
``forward``: a frozen generator mends whatever graph it is given (the client's training
graph, its whole subgraph for unseen nodes, a new client's graph), so every evaluation
sees a mended graph. The generator mends without its training noise and dropout, so a
graph is always mended the same way.

The classifier's input dropout falls on the graph's own nodes only, drawn as for any
other algorithm (for a node's non-zero features, :mod:`stamen.models.feature_dropout`); the
generated rows enter whole, as the frozen generator's outputs. The reference classifiers
(OpenFGL's and FederatedScope's FedSage+ GraphSAGE) draw no input dropout at all; drawing
for every entry of the dense generated rows was a fifth of a Cora run
(benchmarks/fedsage-schedule.md). The mended features stay two blocks
(:class:`~stamen.models.stacked_rows.StackedRows`), so the first layer takes the own rows' sparse
product and the generated rows' dense one.
"""

from __future__ import annotations

import hashlib

import torch
from torch import Tensor, nn
from torch_geometric.nn import SAGEConv
from torch_geometric.utils import degree, subgraph

from stamen.models.derived_graph import OnDerivedGraph
from stamen.models.object_cache import kept_all
from stamen.models.stacked_rows import StackedRows
from stamen.models.training import adam


class NeighGen(nn.Module):
    """Encoder (2 GraphSAGE layers), degree head (dGen) and feature head (fGen, ``max_pred`` slots)."""

    def __init__(self, in_dim: int, hidden: int = 64, max_pred: int = 5, dropout: float = 0.5) -> None:
        super().__init__()
        self.max_pred = max_pred
        self.in_dim = in_dim
        self.conv1 = SAGEConv(in_dim + 1, hidden)
        self.conv2 = SAGEConv(hidden, hidden)
        self.degree_head = nn.Linear(hidden, 1)
        self.feature_head = nn.Sequential(
            nn.Linear(hidden, 2 * hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(2 * hidden, max_pred * in_dim)
        )
        self.dropout = dropout

    def encode(self, x: Tensor, edge_index: Tensor) -> Tensor:
        observed = degree(edge_index[1], x.size(0), dtype=x.dtype).unsqueeze(1)
        h = torch.relu(self.conv1(torch.cat([x, torch.log1p(observed)], dim=1), edge_index))
        h = nn.functional.dropout(h, self.dropout, self.training)
        return self.conv2(h, edge_index)

    def forward(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        """Predicted missing-neighbour counts ``(n,)`` and features ``(n, max_pred, F)``."""
        counts, z = self.encode_with_input(x, edge_index)
        return counts, self.generate(self.feature_head, z)

    def encode_with_input(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        """Predicted missing-neighbour counts ``(n,)`` and fGen's input ``(n, hidden)`` (noise added in training)."""
        z = self.encode(x, edge_index)
        counts = torch.relu(self.degree_head(z)).squeeze(1)
        if self.training:
            z = z + torch.randn_like(z)
        return counts, z

    def generate(self, head: nn.Module, head_input: Tensor) -> Tensor:
        """fGen ``head`` (this generator's or a copy with other weights) on its input: ``(n, max_pred, F)``."""
        return head(head_input).view(-1, self.max_pred, self.in_dim)

    def generate_used(self, head_input: Tensor, slots: Tensor) -> tuple[Tensor, Tensor]:
        r"""fGen's features of the used slots only, :math:`p < k_v` (``slots`` = :math:`k_v`): ``(q, F)`` in slot
        order (every node's slot 0, then slot 1, ...), and each row's node ``(q,)``.

        The same rows as :meth:`generate` (its layers up to the last on every node, so the same dropout
        draws; the last linear map per slot, on the nodes that use the slot), without the
        :math:`(P - k_v) F` outputs per node that no loss reads: on Cora most of the slots.
        """
        head = self.feature_head
        hidden = head[:-1](head_input)
        # the slots' blocks of the last layer as one unbind: its backward stacks their gradients once, where
        # indexing a slot's block adds a weight-sized zero tensor per slot to the backward pass
        weights = head[-1].weight.view(self.max_pred, self.in_dim, -1).unbind(0)
        biases = head[-1].bias.view(self.max_pred, self.in_dim).unbind(0)
        rows, nodes = [], []
        for p in range(self.max_pred):
            chosen = (slots > p).nonzero().squeeze(1)
            rows.append(nn.functional.linear(hidden[chosen], weights[p], biases[p]))
            nodes.append(chosen)
        return torch.cat(rows), torch.cat(nodes)


class Impaired:
    """A subgraph with a share of its nodes hidden, and what each remaining node lost.

    Attributes:
        kept: indices (in the whole subgraph) of the remaining nodes.
        edge_index: the impaired subgraph's edges, on the remaining nodes renumbered ``0..len(kept)-1``.
        missing: each remaining node's number of hidden neighbours ``n_v``.
        targets: ``(len(kept), max_pred, F)``: features of up to ``max_pred`` hidden neighbours (zeros beyond).
        valid: ``(len(kept), max_pred)``: which target slots hold a hidden neighbour.
    """

    def __init__(self, x: Tensor, edge_index: Tensor, hidden_share: float, max_pred: int, generator: torch.Generator):
        n = x.size(0)
        hidden = torch.zeros(n, dtype=torch.bool)
        order = torch.randperm(n, generator=generator)
        hidden[order[: int(round(hidden_share * n))]] = True
        hidden = hidden.to(x.device)
        self.kept = (~hidden).nonzero().squeeze(1)
        self.edge_index, _ = subgraph(self.kept, edge_index, relabel_nodes=True, num_nodes=n)
        source, target = edge_index
        lost = hidden[source] & ~hidden[target]  # an edge from a hidden node into a kept one
        new_id = torch.full((n,), -1, dtype=torch.long, device=x.device)
        new_id[self.kept] = torch.arange(self.kept.numel(), device=x.device)
        rows, neighbours = new_id[target[lost]], source[lost]
        self.missing = torch.bincount(rows, minlength=self.kept.numel()).to(x.dtype)
        # slot of each lost neighbour among its node's: rank within equal rows (rows sorted first)
        order = torch.argsort(rows, stable=True)
        rows, neighbours = rows[order], neighbours[order]
        starts = torch.cumsum(self.missing.long(), 0) - self.missing.long()
        slots = torch.arange(rows.numel(), device=x.device) - starts[rows]
        keep = slots < max_pred
        self.targets = torch.zeros(self.kept.numel(), max_pred, x.size(1), dtype=x.dtype, device=x.device)
        self.targets[rows[keep], slots[keep]] = x[neighbours[keep]]
        self.valid = torch.zeros(self.kept.numel(), max_pred, dtype=torch.bool, device=x.device)
        self.valid[rows[keep], slots[keep]] = True


def matching_loss(rows: Tensor, nodes: Tensor, targets: Tensor, valid: Tensor) -> Tensor:
    r"""FedSage's greedy feature-matching loss :math:`\mathcal{L}_f` (module docstring), over nodes with a target,
    from the used slots' features ``rows`` ``(q, F)`` of nodes ``nodes`` (:meth:`NeighGen.generate_used`).

    Each row is matched to the nearest of its node's targets ``targets`` ``(n, P, F)`` (``valid`` ``(n, P)``),
    found without a gradient (the minimum's gradient is the nearest target's), and its squared distance
    to that target is computed directly: nothing of size :math:`q \times P \times F` is kept for the
    backward pass.
    """
    k = valid.sum(dim=1)  # k_v = min(n_v, P): slots trained, and targets to match
    with torch.no_grad():
        own = targets[nodes]  # (q, P, F)
        scores = own.pow(2).sum(dim=2) - 2 * torch.bmm(own, rows.detach().unsqueeze(2)).squeeze(2)  # (q, P)
        nearest = scores.masked_fill(~valid[nodes], float("inf")).argmin(dim=1)
    distances = (rows - targets[nodes, nearest]).pow(2).sum(dim=1) / rows.size(1)
    per_node = torch.zeros(k.numel(), dtype=rows.dtype, device=rows.device).index_add(0, nodes, distances)
    per_node = per_node / k.clamp(min=1)
    has = k > 0
    return per_node[has].mean() if bool(has.any()) else rows.sum() * 0.0


def epoch_seed(seed: int, epoch: int) -> int:
    """The torch seed of training epoch ``epoch`` (from 0) of a generator seeded by ``seed``."""
    return seed * 7_919 + 104_729 * (epoch + 1)


def local_gradients(
    generator: NeighGen, features: Tensor, impaired: Impaired, weights: tuple[float, float] = (1.0, 1.0)
) -> tuple[float, float, Tensor]:
    r"""One forward and backward pass of :math:`\lambda_d \mathcal{L}_d + \lambda_f \mathcal{L}_f` (gradients left in
    ``.grad``, zeroed first); returns :math:`\mathcal{L}_d`, :math:`\mathcal{L}_f` and fGen's input (detached)."""
    generator.train()
    generator.zero_grad()
    counts, head_input = generator.encode_with_input(features, impaired.edge_index)
    loss_d = nn.functional.smooth_l1_loss(counts, impaired.missing)
    rows, nodes = generator.generate_used(head_input, impaired.valid.sum(dim=1))
    loss_f = matching_loss(rows, nodes, impaired.targets, impaired.valid)
    (weights[0] * loss_d + weights[1] * loss_f).backward()
    return float(loss_d.detach()), float(loss_f.detach()), head_input.detach()


def new_optimizer(generator: NeighGen, lr: float) -> torch.optim.Adam:
    """NeighGen's optimizer (both FedSage variants): torch's Adam, fused where it can be
    (:func:`stamen.models.training.adam`, as every classifier's)."""
    return adam(generator.parameters(), lr, weight_decay=5e-4)


def train_neighgen(
    generator: NeighGen,
    x: Tensor,
    edge_index: Tensor,
    impaired: Impaired,
    epochs: int,
    lr: float = 0.01,
    weights: tuple[float, float] = (1.0, 1.0),
    seed: int | None = None,
) -> tuple[float, float]:
    r"""Fit ``generator`` full-batch on the impaired subgraph; return the last :math:`\mathcal{L}_d, \mathcal{L}_f`.

    With ``seed``, epoch ``e`` draws from ``torch.manual_seed(epoch_seed(seed, e))``; without, from the
    running random state.
    """
    optimizer = new_optimizer(generator, lr)
    features = x[impaired.kept]
    last = (float("nan"), float("nan"))
    for epoch in range(epochs):
        if seed is not None:
            torch.manual_seed(epoch_seed(seed, epoch))
        loss_d, loss_f, _ = local_gradients(generator, features, impaired, weights)
        optimizer.step()
        last = (loss_d, loss_f)
    generator.eval()
    return last


def generated_neighbours(generator: NeighGen, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
    r"""A frozen ``generator``'s neighbours for each node :math:`v`: :math:`k_v = \min(\mathrm{round}(\hat n_v), P)`
    (negative counts none) generated rows ``(g, F)`` and the node each joins ``(g,)``, grouped by node in node
    order, slots in order. The generator's forward pass with only the used slots' rows computed
    (:meth:`NeighGen.generate_used`): on Cora a node uses about one slot of its five."""
    with torch.no_grad():
        counts, head_input = generator.encode_with_input(x, edge_index)
        k = counts.round().clamp(0, generator.max_pred).long()
        rows, anchors = generator.generate_used(head_input, k)  # slot order
        slot = torch.arange(generator.max_pred, device=x.device).repeat_interleave(
            (torch.arange(generator.max_pred, device=x.device).unsqueeze(1) < k.unsqueeze(0)).sum(dim=1)
        )
        order = torch.argsort(anchors * generator.max_pred + slot)
    return rows[order], anchors[order]


def mend(x: Tensor, edge_index: Tensor, rows: Tensor, anchors: Tensor) -> tuple[Tensor, Tensor]:
    """``x`` and ``edge_index`` with the generated ``rows`` ``(g, F)`` joined to the nodes ``anchors`` ``(g,)``.

    Returns:
        The mended graph: nodes ``0..n-1`` unchanged, then the generated nodes in the order given, with
        an edge each way between each and its anchor.
    """
    n = x.size(0)
    new = torch.arange(n, n + anchors.numel(), device=x.device)
    added = torch.cat([torch.stack([anchors, new]), torch.stack([new, anchors])], dim=1)
    return torch.cat([x, rows.to(x.dtype)]), torch.cat([edge_index, added], dim=1)


def weights_digest(module: nn.Module) -> str:
    """A digest of ``module``'s weights: equal digests, equal weights."""
    digest = hashlib.blake2b(digest_size=16)
    for name, tensor in module.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def mended_once(generator: NeighGen, digest: str, x: Tensor, edge_index: Tensor) -> tuple[StackedRows, Tensor]:
    """``mend`` of ``(x, edge_index)`` by the frozen ``generator`` (its weights' ``digest``), kept while the graph
    lives (:mod:`stamen.models.object_cache`) for the latest generator only. The features come as
    :class:`~stamen.models.stacked_rows.StackedRows`: ``x`` itself (sparse where it is) over the generated rows.

    The mended graph depends on the graph and the generator's weights alone (the generator
    mends in evaluation mode: no noise, no dropout), and a client's graphs are the same
    objects every round in a process. Mending every forward pass cost FedSage a generator
    pass over the graph per training epoch and per evaluation (benchmarks/fedsage-schedule.md).
    """
    slot: dict = kept_all((x, edge_index), "fedsage-mended", dict)
    if slot.get("digest") != digest:
        slot.clear()  # the previous generator's graph goes first
        mended_x, mended_edges = mend(x, edge_index, *generated_neighbours(generator, x, edge_index))
        slot.update(digest=digest, graph=(StackedRows(x, mended_x[x.size(0) :]), mended_edges))
    return slot["graph"]


class MendedClassifier(OnDerivedGraph):
    """``classifier`` applied to the graph mended by a frozen ``generator``; logits of the original nodes.

    ``state_dict`` holds both parts (``classifier.*``, ``generator.*``); a client shares
    the classifier only.
    """

    def __init__(self, classifier: nn.Module, generator: NeighGen, digest: str | None = None) -> None:
        """``digest``: a key of ``generator``'s weights where the caller has one (:func:`weights_digest` otherwise):
        a graph is mended again only when the key changes."""
        super().__init__()
        self.classifier = classifier
        self.generator = generator.eval().requires_grad_(False)
        self.generator_digest = digest if digest is not None else weights_digest(generator)

    def train(self, mode: bool = True) -> MendedClassifier:
        super().train(mode)
        self.generator.eval()  # the generator mends, it is not trained here
        return self

    def mended(self, x: Tensor, edge_index: Tensor) -> tuple[StackedRows, Tensor]:
        """The graph mended by the generator, built once per graph and generator (see :func:`mended_once`)."""
        return mended_once(self.generator, self.generator_digest, x, edge_index)

    def derived(self, x: Tensor, edge_index: Tensor) -> tuple[StackedRows, Tensor]:
        """The graph the classifier computes on: the mended one (:meth:`mended`)."""
        return self.mended(x, edge_index)

    @property
    def head(self) -> nn.Module:
        return self.classifier.head

    def embed(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """The classifier's embeddings of the original nodes on the mended graph."""
        return self.classifier.embed(*self.mended(x, edge_index))[: x.size(0)]

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        mended_x, mended_edges = self.mended(x, edge_index)
        return self.classifier(mended_x, mended_edges)[: x.size(0)]
