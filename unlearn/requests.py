r"""Forgetting requests and the federation they leave behind.

A request names the data to forget:

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

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import subgraph

KINDS = ("client", "nodes", "class")


@dataclass(frozen=True)
class Request:
    """One forgetting request (see the module docstring).

    Attributes:
        kind: ``client``, ``nodes`` or ``class``.
        client: the requesting client (``client``/``nodes``), else ``None``.
        fraction: share of the client's training nodes (``nodes``), else ``None``.
        label: the forgotten class (``class``), else ``None``.
    """

    kind: str
    client: int | None = None
    fraction: float | None = None
    label: int | None = None

    def __str__(self) -> str:
        if self.kind == "client":
            return f"client:{self.client}"
        if self.kind == "nodes":
            return f"nodes:{self.client}:{self.fraction:g}"
        return f"class:{self.label}"

    @property
    def slug(self) -> str:
        """A file-system friendly name: ``client-0``, ``nodes-0-0.5``, ``class-2``."""
        return str(self).replace(":", "-")


def parse_request(text: str, num_clients: int, num_classes: int) -> Request:
    """Parse ``client:i``, ``nodes:i:FRACTION`` or ``class:c``; raise ``ValueError`` with one line."""
    parts = [p.strip() for p in str(text).strip().split(":")]
    kind = parts[0]
    shapes = {"client": "client:i", "nodes": "nodes:i:FRACTION", "class": "class:c"}
    if kind not in shapes:
        raise ValueError(f"unknown request {text!r}; use client:i, nodes:i:FRACTION or class:c")
    expected = 3 if kind == "nodes" else 2
    if len(parts) != expected:
        raise ValueError(f"request {text!r} must look like {shapes[kind]}")
    try:
        index = int(parts[1])
    except ValueError:
        raise ValueError(f"request {text!r}: {parts[1]!r} is not an integer") from None
    if kind == "class":
        if not 0 <= index < num_classes:
            raise ValueError(f"request {text!r}: class {index} is out of range 0..{num_classes - 1}")
        return Request("class", label=index)
    if not 0 <= index < num_clients:
        raise ValueError(f"request {text!r}: client {index} is out of range 0..{num_clients - 1}")
    if kind == "client":
        if num_clients < 2:
            raise ValueError(f"request {text!r}: forgetting a whole client needs at least 2 clients")
        return Request("client", client=index)
    try:
        fraction = float(parts[2])
    except ValueError:
        raise ValueError(f"request {text!r}: fraction {parts[2]!r} is not a number") from None
    if not (0.0 < fraction <= 1.0):
        raise ValueError(f"request {text!r}: fraction {fraction:g} must lie in (0, 1]")
    return Request("nodes", client=index, fraction=fraction)


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

    request: Request
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

    Node attributes (``x``, ``y``, ``global_id``, the split masks) follow the kept nodes.
    """
    keep = (~drop).nonzero().view(-1)
    edge_index, _ = subgraph(keep, data.edge_index, relabel_nodes=True, num_nodes=data.num_nodes)
    out = Data(x=data.x[keep], y=data.y[keep], edge_index=edge_index, num_classes=data.num_classes)
    for name in ("global_id", "train_mask", "val_mask", "test_mask"):
        if name in data:
            out[name] = data[name][keep]
    return out


def client_forget_mask(data: Data, index: int, request: Request, seed: int) -> torch.Tensor:
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


def forget_masks(clients: list[Data], request: Request, seed: int) -> list[torch.Tensor]:
    """Per-client boolean masks of :math:`D_f` (always a subset of the training nodes)."""
    return [client_forget_mask(data, index, request, seed) for index, data in enumerate(clients)]


def remaining_view(data: Data, index: int, request: Request, forget: torch.Tensor) -> Data | None:
    """What client ``index`` keeps after the request: ``None`` if it leaves, else its subgraph
    without the nodes of ``forget`` and their edges."""
    if request.kind == "client" and index == request.client:
        return None
    return drop_nodes(data, forget) if bool(forget.any()) else data.clone()


def split_federation(clients: list[Data], request: Request, seed: int = 0) -> ForgetSplit:
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
