r"""``wash``: forget by a closed-form least-squares edit of the head (after LaW, ICLR 2025).

Knowledge-washing methods edit an MLP's weights in closed form, as model-editing does:
keep the layer's outputs on the knowledge to keep, move them on the knowledge to forget.
In Stamen's node classifiers the head is one linear layer on the encoder's embeddings
(:mod:`stamen.models.node_classifier`), so the head is edited.

**Keys.** A node's key is its embedding with a 1 appended, :math:`\mathbf{k} = [\mathbf{h}; 1]
\in \mathbb{R}^{d}`, so the bias is folded into :math:`\mathbf{W} = [\mathbf{W}_{head}, \mathbf{b}]
\in \mathbb{R}^{C \times d}` and the output is :math:`\mathbf{o} = \mathbf{W}\mathbf{k}`. All statistics
are float64. :math:`\mathbf{K}_f \in \mathbb{R}^{d \times n_f}` holds the keys of :math:`D_f` (as
columns), :math:`\mathbf{K}_r` those of the remaining training nodes :math:`D_r`.

**Edit.** With targets :math:`\mathbf{T}_f` and residual :math:`\mathbf{R} = \mathbf{T}_f - \mathbf{W}\mathbf{K}_f`,

.. math::
    \boldsymbol{\Delta} = \arg\min_{\boldsymbol{\Delta}}
        \lVert \boldsymbol{\Delta}\mathbf{K}_f - \mathbf{R} \rVert_F^2
        + \lambda \lVert \boldsymbol{\Delta}\mathbf{K}_r \rVert_F^2
    = \mathbf{R}\mathbf{K}_f^\top (\lambda \mathbf{C} + \mathbf{K}_f\mathbf{K}_f^\top)^{-1},
    \qquad \mathbf{C} = \mathbf{K}_r\mathbf{K}_r^\top = \textstyle\sum_{k \in D_r} \mathbf{k}\mathbf{k}^\top,

i.e. the solution of the normal equations
:math:`\boldsymbol{\Delta}(\lambda\mathbf{C} + \mathbf{K}_f\mathbf{K}_f^\top) = \mathbf{R}\mathbf{K}_f^\top`.
Outputs on keys in the span of :math:`\mathbf{K}_r` barely move (each is penalised by
:math:`\lambda`), forgotten outputs move towards their targets; :math:`\lambda \to \infty`
gives :math:`\boldsymbol{\Delta} \to 0`.

**Targets.** ``drop-class`` (class requests): the forgotten class's logit is pushed
``margin`` below the best other logit, :math:`t_c = \min(o_c, \max_{j \ne c} o_j - m)`, the
others kept. ``neighbor`` (node and client requests): the mean original output over the
node's surviving neighbours (nodes of its client's subgraph not in :math:`D_f`; for a
client request those are the client's unlabelled nodes), falling back to surviving
2-hop neighbours, then to the mean over the client's surviving nodes.

**Choosing** :math:`\lambda`. ``norm``: the smallest :math:`\lambda` whose edit stays within a
budget relative to the weights, :math:`\lVert\boldsymbol{\Delta}\rVert_F \le \rho\lVert\mathbf{W}\rVert_F`
(bisection on :math:`\log\lambda`; :math:`\lambda` is measured in units of
:math:`\operatorname{tr}(\mathbf{K}_f\mathbf{K}_f^\top)/\operatorname{tr}(\mathbf{C})`); ``heldout``: the smallest
:math:`\lambda` on a grid whose edited head still agrees with the original predictions
on held-out remaining nodes (validation nodes) for all but :math:`\lceil\epsilon n\rceil` of them (for a
class request, held-out nodes predicted as the forgotten class are not counted). ``heldout``
is the default: a fixed norm budget that suffices on one graph is too tight on another.

**Federated form.** Every client :math:`i` sends :func:`client_statistics`:
:math:`\mathbf{C}_i = \mathbf{K}_i\mathbf{K}_i^\top` (:math:`d \times d`) over its remaining nodes and,
where it holds forgotten nodes, :math:`\mathbf{K}_{f,i}\mathbf{K}_{f,i}^\top` and
:math:`\mathbf{K}_{f,i}\mathbf{R}_i^\top` (:math:`d \times C`). Sums of these are the centralised
matrices, so :func:`solve_edit` on the summed statistics gives the centralised edit
:func:`closed_form`. No node-level rows travel.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import Tensor
from torch_geometric.data import Data

from stamen.models import NodeClassifier
from stamen.unlearn.requests import ForgetRequest, ForgetSplit

TARGETS = ("drop-class", "neighbor")


# ----------------------------------------------------------------------------- keys and targets
def keys(embeddings: Tensor) -> Tensor:
    """Keys as rows: ``[h, 1]`` in float64, shape ``(n, d + 1)``."""
    embeddings = embeddings.detach().to(torch.float64)
    return torch.cat([embeddings, torch.ones(embeddings.size(0), 1, dtype=torch.float64)], dim=1)


def head_matrix(head: torch.nn.Linear) -> Tensor:
    r""":math:`[\mathbf{W}, \mathbf{b}]` in float64, shape ``(C, d + 1)``."""
    return torch.cat([head.weight.detach(), head.bias.detach()[:, None]], dim=1).to(torch.float64)


def drop_class_targets(outputs: Tensor, label: int, margin: float = 1.0) -> Tensor:
    r"""Targets with logit ``label`` at most ``margin`` below the best other logit, others unchanged."""
    targets = outputs.clone().to(torch.float64)
    others = torch.cat([targets[:, :label], targets[:, label + 1 :]], dim=1).max(dim=1).values
    targets[:, label] = torch.minimum(targets[:, label], others - margin)
    return targets


def neighbor_targets(outputs: Tensor, edge_index: Tensor, forget: Tensor) -> Tensor:
    """Mean of ``outputs`` over each forgotten node's surviving neighbours (rows of ``forget``).

    Surviving: not in ``forget``. Fallbacks: surviving 2-hop neighbours, then the mean over
    all surviving nodes (then over all nodes).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse", category=UserWarning)
        return _neighbor_targets(outputs, edge_index, forget)


def _neighbor_targets(outputs: Tensor, edge_index: Tensor, forget: Tensor) -> Tensor:
    n = outputs.size(0)
    outputs = outputs.to(torch.float64)
    alive = (~forget).to(torch.float64)
    adjacency = torch.sparse_coo_tensor(edge_index, torch.ones(edge_index.size(1), dtype=torch.float64), (n, n))
    adjacency = adjacency.coalesce()
    one_hop_sum = torch.sparse.mm(adjacency, outputs * alive[:, None])
    one_hop_count = torch.sparse.mm(adjacency, alive[:, None]).view(-1)
    two_hop = torch.sparse.mm(adjacency, adjacency).coalesce()
    two_hop = torch.sparse_coo_tensor(two_hop.indices(), torch.ones_like(two_hop.values()), (n, n))
    two_hop_sum = torch.sparse.mm(two_hop, outputs * alive[:, None])
    two_hop_count = torch.sparse.mm(two_hop, alive[:, None]).view(-1)
    fallback = outputs[~forget].mean(0) if bool((~forget).any()) else outputs.mean(0)
    targets = fallback.expand(n, -1).clone()
    use_two = two_hop_count > 0
    targets[use_two] = two_hop_sum[use_two] / two_hop_count[use_two, None]
    use_one = one_hop_count > 0
    targets[use_one] = one_hop_sum[use_one] / one_hop_count[use_one, None]
    return targets[forget]


# ----------------------------------------------------------------------------- the closed form
def check_statistic(name: str, value: Tensor, shape: tuple[int, int]) -> None:
    """Raise ``ValueError`` unless ``value`` is a float64 matrix of ``shape``: a statistic's only form
    (a client's reply of any other shape could carry node-level rows)."""
    if tuple(value.shape) != tuple(shape) or value.dtype != torch.float64:
        raise ValueError(
            f"{name!r} must be float64 {tuple(shape)}, got {str(value.dtype).replace('torch.', '')} "
            f"{tuple(value.shape)}"
        )


@dataclass
class EditStatistics:
    r"""What one client sends: :math:`d \times d` and :math:`d \times C` sums, and counts.

    Attributes:
        keep: :math:`\sum_{k \in D_r^{(i)}} \mathbf{k}\mathbf{k}^\top`.
        forget: :math:`\sum_{k \in D_f^{(i)}} \mathbf{k}\mathbf{k}^\top`.
        cross: :math:`\sum_{k \in D_f^{(i)}} \mathbf{k}\,\mathbf{r}^\top`
            (the transpose of :math:`\mathbf{R}\mathbf{K}_f^\top`).
        num_keep, num_forget: how many keys went into the sums.
    """

    keep: Tensor
    forget: Tensor
    cross: Tensor
    num_keep: int = 0
    num_forget: int = 0

    def __post_init__(self) -> None:
        d, num_outputs = self.keep.size(0), self.cross.size(-1)
        check_statistic("keep", self.keep, (d, d))
        check_statistic("forget", self.forget, (d, d))
        check_statistic("cross", self.cross, (d, num_outputs))

    def __add__(self, other: EditStatistics) -> EditStatistics:
        return EditStatistics(
            self.keep + other.keep,
            self.forget + other.forget,
            self.cross + other.cross,
            self.num_keep + other.num_keep,
            self.num_forget + other.num_forget,
        )

    def payload(self) -> dict[str, Tensor]:
        """The arrays a client would put in its message (no node-level data)."""
        return {"keep": self.keep, "forget": self.forget, "cross": self.cross}


def client_statistics(
    keep_keys: Tensor,
    forget_keys: Tensor | None = None,
    residual: Tensor | None = None,
    num_outputs: int | None = None,
) -> EditStatistics:
    r"""One client's statistics from its keys (rows, ``(n, d)``) and residuals (rows, ``(n_f, C)``).

    A client without forgotten nodes passes only ``keep_keys`` (and ``num_outputs``).
    """
    keep_keys = keep_keys.to(torch.float64)
    d = keep_keys.size(1)
    if forget_keys is None or forget_keys.size(0) == 0:
        if num_outputs is None:
            if residual is None:
                raise ValueError("client_statistics needs num_outputs when the client forgets nothing")
            num_outputs = residual.size(1)
        forget = torch.zeros(d, d, dtype=torch.float64)
        cross = torch.zeros(d, num_outputs, dtype=torch.float64)
        return EditStatistics(keep_keys.T @ keep_keys, forget, cross, keep_keys.size(0), 0)
    forget_keys = forget_keys.to(torch.float64)
    residual = residual.to(torch.float64)
    if forget_keys.size(1) != d:
        raise ValueError(f"forget keys have width {forget_keys.size(1)}, keep keys {d}")
    if residual.size(0) != forget_keys.size(0):
        raise ValueError(f"{residual.size(0)} residual rows for {forget_keys.size(0)} forgotten keys; one each")
    if num_outputs is not None and residual.size(1) != num_outputs:
        raise ValueError(f"residual width {residual.size(1)} differs from num_outputs={num_outputs}")
    return EditStatistics(
        keep_keys.T @ keep_keys,
        forget_keys.T @ forget_keys,
        forget_keys.T @ residual,
        keep_keys.size(0),
        forget_keys.size(0),
    )


def total(stats: EditStatistics | Iterable[EditStatistics]) -> EditStatistics:
    """Sum of clients' statistics."""
    if isinstance(stats, EditStatistics):
        return stats
    stats = list(stats)
    out = stats[0]
    for other in stats[1:]:
        out = out + other
    return out


def lambda_scale(stats: EditStatistics) -> float:
    r"""The unit of :math:`\lambda`:
    :math:`\operatorname{tr}(\mathbf{K}_f\mathbf{K}_f^\top) / \operatorname{tr}(\mathbf{C})`."""
    return float(torch.trace(stats.forget) / torch.trace(stats.keep).clamp_min(1e-300))


def solve_edit(stats: EditStatistics | Iterable[EditStatistics], lam: float) -> Tensor:
    r"""The edit from summed statistics, shape ``(C, d)``:
    :math:`\boldsymbol{\Delta} = \mathbf{R}\mathbf{K}_f^\top
    (\lambda\mathbf{C} + \mathbf{K}_f\mathbf{K}_f^\top)^{-1}`."""
    s = total(stats)
    if math.isinf(lam):
        return torch.zeros(s.cross.size(1), s.cross.size(0), dtype=torch.float64)
    if lam < 0:
        raise ValueError(f"lambda must be >= 0, got {lam}")
    system = lam * s.keep + s.forget
    system = 0.5 * (system + system.T)
    try:
        delta_t = torch.linalg.solve(system, s.cross)
    except RuntimeError:  # singular (e.g. an embedding unit that is 0 on every node): the min-norm solution
        delta_t = torch.linalg.lstsq(system, s.cross, driver="gelsd").solution
    return delta_t.T.contiguous()


def closed_form(keep_keys: Tensor, forget_keys: Tensor, residual: Tensor, lam: float) -> Tensor:
    r"""The centralised edit from all keys at once (keys and residuals as rows), for reference."""
    k_r = keep_keys.to(torch.float64).T  # d x n_r
    k_f = forget_keys.to(torch.float64).T  # d x n_f
    r = residual.to(torch.float64).T  # C x n_f
    system = lam * (k_r @ k_r.T) + k_f @ k_f.T
    return torch.linalg.solve(system.T, (r @ k_f.T).T).T


def choose_lambda_norm(
    stats: EditStatistics | Iterable[EditStatistics], weight: Tensor, max_ratio: float = 1.0
) -> float:
    r"""Smallest :math:`\lambda` with :math:`\lVert\boldsymbol{\Delta}\rVert_F \le \rho\,\lVert\mathbf{W}\rVert_F`
    (:math:`\rho` = ``max_ratio``).

    :math:`\lambda` is searched in :math:`[10^{-6}, 10^{8}]` units of :func:`lambda_scale` by
    bisection on :math:`\log\lambda` (the edit's norm falls as :math:`\lambda` grows); if even the
    least regularised edit is within the budget, that one is taken.
    """
    s = total(stats)
    unit = lambda_scale(s)
    norm_w = float(weight.norm())

    def ratio(exponent: float) -> float:
        return float(solve_edit(s, 10**exponent * unit).norm()) / norm_w

    lo, hi = -6.0, 8.0
    if ratio(lo) <= max_ratio:
        return 10**lo * unit
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if ratio(mid) > max_ratio:
            lo = mid
        else:
            hi = mid
    return 10**hi * unit


HELDOUT_GRID = tuple(10.0**k for k in range(-6, 7))


def candidate_lambdas(
    stats: EditStatistics | Iterable[EditStatistics], grid: Iterable[float] = HELDOUT_GRID
) -> list[float]:
    """The held-out rule's candidate :math:`\\lambda` values, ascending (``grid`` in units of :func:`lambda_scale`)."""
    unit = lambda_scale(total(stats))
    return [lam * unit for lam in sorted(grid)]


@torch.no_grad()
def prediction_changes(
    weight: Tensor, deltas: Iterable[Tensor], heldout_keys: Tensor, forgotten_class: int | None = None
) -> tuple[list[int], int]:
    """How many counted held-out predictions (keys as rows) each edit changes, and how many are counted.

    With ``forgotten_class`` set, nodes the original head assigns to that class are not
    counted: their predictions are meant to change. No labels are used; a client can
    answer this for its own validation nodes and send the two counts only.
    """
    heldout_keys = heldout_keys.to(torch.float64)
    weight = weight.to(torch.float64)
    before = (heldout_keys @ weight.T).argmax(1)
    counted = before != forgotten_class if forgotten_class is not None else torch.ones_like(before, dtype=torch.bool)
    changed = []
    for delta in deltas:
        after = (heldout_keys @ (weight + delta.to(torch.float64)).T).argmax(1)
        changed.append(int(((after != before) & counted).sum()))
    return changed, int(counted.sum())


def smallest_within(lambdas: list[float], changed: list[int], counted: int, tolerance: float) -> float:
    """The first (smallest) :math:`\\lambda` whose edit changes at most :math:`\\lceil\\epsilon n\\rceil` of the
    :math:`n` counted predictions (the largest candidate if none does).

    Rounding up lets a held-out set of fewer than :math:`1/\\epsilon` nodes tolerate one change
    rather than none (with none, one borderline node would veto every useful edit).
    """
    allowed = math.ceil(tolerance * counted)
    for lam, count in zip(lambdas, changed):
        if count <= allowed:
            return lam
    return lambdas[-1]


def choose_lambda_heldout(
    stats: EditStatistics | Iterable[EditStatistics],
    weight: Tensor,
    heldout_keys: Tensor,
    tolerance: float = 0.01,
    grid: Iterable[float] = HELDOUT_GRID,
    forgotten_class: int | None = None,
) -> float:
    r"""Smallest :math:`\lambda` (grid, in units of :func:`lambda_scale`) whose edit changes at most
    ``tolerance`` of the predictions on held-out remaining keys (rows).

    With ``forgotten_class`` set, held-out nodes the original head assigns to that class are
    not counted: their predictions are meant to change. No labels are used.
    """
    s = total(stats)
    lambdas = candidate_lambdas(s, grid)
    changed, counted = prediction_changes(
        weight, [solve_edit(s, lam) for lam in lambdas], heldout_keys, forgotten_class
    )
    return smallest_within(lambdas, changed, counted, tolerance)


# ----------------------------------------------------------------------------- the method on a model
@dataclass
class WashConfig:
    """Options of :func:`wash`.

    Attributes:
        target: ``drop-class``, ``neighbor`` or ``auto`` (drop-class for class requests, else neighbor).
        lam: a number (absolute :math:`\\lambda`), ``norm`` or ``heldout``.
        max_ratio: the norm rule's budget :math:`\\rho` on :math:`\\lVert\\Delta\\rVert_F / \\lVert W\\rVert_F`.
        tolerance: the held-out rule's allowed share of changed predictions.
        margin: the drop-class margin below the best other logit.
    """

    target: str = "auto"
    lam: float | str = "heldout"
    max_ratio: float = 1.0
    tolerance: float = 0.01
    margin: float = 3.0


def resolve_target(target: str, request: ForgetRequest) -> str:
    """``auto`` is ``drop-class`` for a class request and ``neighbor`` otherwise; check the name."""
    if target == "auto":
        target = "drop-class" if request.kind == "class" else "neighbor"
    if target not in TARGETS:
        raise ValueError(f"unknown wash target {target!r}; choose one of: auto, {', '.join(TARGETS)}")
    return target


@torch.no_grad()
def client_wash_statistics(
    model: NodeClassifier,
    data: Data,
    forget: Tensor,
    remaining: Data | None,
    request: ForgetRequest,
    config: WashConfig,
) -> EditStatistics:
    """One client's :class:`EditStatistics`, computed where its data lives.

    Args:
        model: the original model (eval mode is set here).
        data: the client's subgraph as trained.
        forget: boolean mask of its :math:`D_f` on ``data``.
        remaining: its subgraph after the request (:func:`stamen.unlearn.requests.remaining_view`),
            ``None`` if it leaves: keys to keep come from the training nodes there.
        request: the request (the class of ``drop-class`` targets).
        config: the target and margin.
    """
    model.eval()
    target = resolve_target(config.target, request)
    weight = head_matrix(model.head)
    if remaining is not None:
        keep_keys = keys(model.encoder(remaining.x, remaining.edge_index))[remaining.train_mask]
    else:
        keep_keys = torch.zeros(0, weight.size(1), dtype=torch.float64)
    if not bool(forget.any()):
        return client_statistics(keep_keys.cpu(), num_outputs=weight.size(0))
    all_keys = keys(model.encoder(data.x, data.edge_index))
    outputs = all_keys @ weight.T
    if target == "drop-class":
        label = request.label if request.label is not None else 0
        targets = drop_class_targets(outputs[forget], label, config.margin)
    else:
        targets = neighbor_targets(outputs, data.edge_index, forget)
    residual = targets - outputs[forget]
    return client_statistics(keep_keys.cpu(), all_keys[forget].cpu(), residual.cpu(), weight.size(0))


def wash_statistics(model: NodeClassifier, split: ForgetSplit, config: WashConfig) -> list[EditStatistics]:
    """Every original client's :class:`EditStatistics` (what each would send), in client order."""
    remaining = dict(zip(split.remaining_clients, split.remaining))
    return [
        client_wash_statistics(model, data, data.forget_mask, remaining.get(index), split.request, config)
        for index, data in enumerate(split.original)
    ]


@torch.no_grad()
def heldout_keys(model: NodeClassifier, split: ForgetSplit) -> Tensor:
    """Keys of the remaining clients' validation nodes (the held-out remaining data; no labels read)."""
    rows = [keys(model.encoder(d.x, d.edge_index))[d.val_mask] for d in split.remaining]
    return torch.cat(rows)


@dataclass
class WashResult:
    """What :func:`washed` gives: the edited copy, the :math:`\\lambda` chosen, the edit's norm ratio, the time."""

    model: NodeClassifier
    lam: float
    edit_ratio: float
    seconds: float


def washed(model: NodeClassifier, split: ForgetSplit, config: WashConfig | None = None) -> WashResult:
    """A copy of ``model`` with its head edited, and what the edit was."""
    config = config or WashConfig()
    started = time.perf_counter()
    model = copy.deepcopy(model)
    weight = head_matrix(model.head)
    stats = total(wash_statistics(model, split, config))
    if config.lam == "norm":
        lam = choose_lambda_norm(stats, weight, config.max_ratio)
    elif config.lam == "heldout":
        lam = choose_lambda_heldout(
            stats, weight, heldout_keys(model, split), config.tolerance, forgotten_class=split.request.label
        )
    elif isinstance(config.lam, (int, float)):
        lam = float(config.lam)
    else:
        raise ValueError(f"wash lambda must be a number, 'norm' or 'heldout', got {config.lam!r}")
    delta = solve_edit(stats, lam)
    apply_edit(model.head, delta)
    return WashResult(model, lam, float(delta.norm() / weight.norm()), time.perf_counter() - started)


def wash(model: NodeClassifier, split: ForgetSplit, config: WashConfig | None = None) -> NodeClassifier:
    """A copy of ``model`` with its head edited (:func:`washed`)."""
    return washed(model, split, config).model


def edited_head(weight: Tensor, bias: Tensor, delta: Tensor) -> tuple[Tensor, Tensor]:
    """``[W, b] + delta`` as new tensors of ``W``'s and ``b``'s dtypes (``delta``: ``C x (d_h + 1)``)."""
    if tuple(delta.shape) != (weight.size(0), weight.size(1) + 1):
        raise ValueError(f"the edit has shape {tuple(delta.shape)}, the head {tuple(weight.shape)} plus a bias")
    return weight + delta[:, :-1].to(weight.dtype), bias + delta[:, -1].to(bias.dtype)


@torch.no_grad()
def apply_edit(head: torch.nn.Linear, delta: Tensor) -> None:
    """``[W, b] += delta`` in place (:func:`edited_head`; the server edits its weights with it too)."""
    weight, bias = edited_head(head.weight, head.bias, delta)
    head.weight.copy_(weight)
    head.bias.copy_(bias)


def forget_keys_of(model: NodeClassifier, data: Data) -> Tensor:
    """Keys of ``data``'s forgotten nodes (on the graph as trained)."""
    with torch.no_grad():
        model.eval()
        return keys(model.encoder(data.x, data.edge_index))[data.forget_mask]
