r"""The federation a forgetting request leaves behind: forget masks, dropped nodes, the split.

The request itself is a light typed value parsed once, in the run config's contract
(``stamen.contract.requests.Request``, one floor up); here it is any object with its four
fields (:class:`ForgetRequest`):

- ``client:i``: everything client ``i`` contributed. :math:`D_f` is its training nodes
  (the labelled data the model was fitted on); the client leaves the federation, so
  retraining runs over the other ``K - 1`` clients.
- ``nodes:i:FRACTION``: a random share (seeded) of client ``i``'s training nodes.
- ``class:c``: every training node of class ``c``, on every client.

:func:`split_federation` turns a request into a :class:`ForgetSplit`: the clients'
subgraphs as the model was trained on them, with a ``forget_mask`` over
:math:`D_f`, and the *remaining* federation, in which the forgotten nodes are removed
together with every edge incident to them (what retraining from scratch sees and
what the unlearned model serves). :math:`D_r` is the training nodes of the remaining
federation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import subgraph

__all__ = [
    "ForgetRequest",
    "ForgetSplit",
    "client_forget_mask",
    "drop_nodes",
    "forget_masks",
    "remaining_view",
    "split_federation",
]


class ForgetRequest(Protocol):
    """What a request says: its kind (``client``, ``nodes`` or ``class``), the client, the share, the class."""

    kind: str
    client: int | None
    fraction: float | None
    label: int | None


@dataclass
class ForgetSplit:
    """The federation seen through one request.

    Attributes:
        request: the request.
        original: every client's subgraph as trained, with ``forget_mask`` (:math:`D_f`, training nodes).
        remaining: the subgraphs retraining and serving use: forgotten nodes and their edges
            removed; a forgotten client is absent.
        remaining_clients: the original index of each entry of ``remaining``.
        forget_ids: global node ids of :math:`D_f` (sorted).
        num_classes: number of classes.
    """

    request: ForgetRequest
    original: list[Data]
    remaining: list[Data]
    remaining_clients: list[int]
    forget_ids: torch.Tensor
    num_classes: int

    def serving(self) -> list[Data]:
        """One graph per original client for serving-time evaluation: its remaining subgraph,
        or its original subgraph where the client left (its nodes are then all gone)."""
        by_client = dict(zip(self.remaining_clients, self.remaining))
        return [by_client.get(i, data) for i, data in enumerate(self.original)]


def drop_nodes(data: Data, drop: torch.Tensor) -> Data:
    """``data`` without the nodes in boolean mask ``drop`` and without every edge touching them.

    Every node attribute (``x``, ``y``, ``global_id``, the split and evaluation-setting masks)
    follows the kept nodes; every edge list (``edge_index``, ``full_edge_index``) keeps the
    edges between kept nodes, renumbered; graph-level values (``num_classes``) stay. A client
    that drops nodes thus reports the same figures as one that drops none.
    """
    num_nodes = int(data.num_nodes)
    keep = (~drop).nonzero().view(-1)
    out = Data()
    for key, value in data:
        if key.endswith("edge_index"):
            out[key] = subgraph(keep, value, relabel_nodes=True, num_nodes=num_nodes)[0]
        elif torch.is_tensor(value) and value.dim() >= 1 and value.size(0) == num_nodes:
            out[key] = value[keep]
        else:
            out[key] = value
    return out


def client_forget_mask(data: Data, index: int, request: ForgetRequest, seed: int) -> torch.Tensor:
    """Boolean mask of :math:`D_f` on client ``index``'s subgraph ``data`` (a subset of its training nodes).

    A client computes its own mask from the request alone: no other client's data is needed.
    """
    mask = torch.zeros(int(data.num_nodes), dtype=torch.bool, device=data.train_mask.device)
    if request.kind == "class":
        return data.train_mask & (data.y == request.label)
    if index != request.client:
        return mask
    if request.kind == "client":
        return data.train_mask.clone()
    train = data.train_mask.nonzero().view(-1).cpu().numpy()
    count = max(1, int(round(request.fraction * train.size)))
    chosen = np.random.default_rng(seed).choice(train, size=count, replace=False)
    mask[torch.as_tensor(np.sort(chosen), device=mask.device)] = True
    return mask


def forget_masks(clients: list[Data], request: ForgetRequest, seed: int) -> list[torch.Tensor]:
    """Per-client boolean masks of :math:`D_f` (always a subset of the training nodes)."""
    return [client_forget_mask(data, index, request, seed) for index, data in enumerate(clients)]


def remaining_view(data: Data, index: int, request: ForgetRequest, forget: torch.Tensor) -> Data | None:
    """What client ``index`` keeps after the request: ``None`` if it leaves, else its subgraph
    without the nodes of ``forget`` and their edges."""
    if request.kind == "client" and index == request.client:
        return None
    return drop_nodes(data, forget) if bool(forget.any()) else data.clone()


def split_federation(clients: list[Data], request: ForgetRequest, seed: int = 0) -> ForgetSplit:
    """Apply ``request`` to the clients' subgraphs (``seed`` picks the nodes of ``nodes:`` requests)."""
    num_classes = int(clients[0].num_classes)
    if request.client is not None and not 0 <= request.client < len(clients):
        raise ValueError(f"request {request}: client {request.client} is out of range 0..{len(clients) - 1}")
    if request.label is not None and not 0 <= request.label < num_classes:
        raise ValueError(f"request {request}: class {request.label} is out of range 0..{num_classes - 1}")
    masks = forget_masks(clients, request, seed)
    original, remaining, remaining_clients = [], [], []
    for index, (data, mask) in enumerate(zip(clients, masks)):
        copy = data.clone()
        copy.forget_mask = mask
        original.append(copy)
        kept = remaining_view(data, index, request, mask)
        if kept is not None:
            remaining.append(kept)
            remaining_clients.append(index)
    forget_ids = torch.cat([d.global_id[d.forget_mask] for d in original]).sort().values
    if forget_ids.numel() == 0:
        raise ValueError(f"request {request} selects no training nodes")
    return ForgetSplit(request, original, remaining, remaining_clients, forget_ids, num_classes)
