"""The four evaluation settings of local generalization (FedLoG, Kim et al., ICLR 2025).

A client's part of the graph is its subgraph :math:`G_k`. Before training, two kinds of
data are taken away from the client and kept for evaluation:

- *unseen nodes* :math:`U_k`: a random share ``unseen_node_frac`` of :math:`G_k`'s nodes,
  removed with their edges during training and added back at evaluation time;
- *missing classes* :math:`M_k`: the ``missing_classes`` classes with the fewest nodes in
  :math:`G_k` (among those it has, keeping at least one; ties broken by the seed) lose every label at the
  client; their nodes stay in the training graph, unlabelled. A class that ends up
  without a training label by chance (a rare class drawn into validation or test)
  counts as missing too.

The client then trains on :math:`T_k = G_k \\setminus U_k` with a random
train/validation/test split of its labelled nodes (those not in :math:`M_k`). Settings:

- *seen graph*: the test nodes of :math:`T_k`, on :math:`T_k` (``test_mask``);
- *unseen node*: :math:`U_k`'s nodes of the client's classes, on :math:`G_k` (``unseen_mask``);
- *missing class*: every node of a class without a training label at the client, on
  :math:`G_k` (``missing_mask``);
- *new client*: every node of one more part that no client trains on (see
  :class:`stamen.graphs.federation.FederationSpec` ``new_client``).

The client's :class:`~torch_geometric.data.Data` holds all of :math:`G_k`'s nodes:
``edge_index`` is the training graph (no edge touches an unseen node, which is
therefore isolated and never labelled) and ``full_edge_index`` is :math:`G_k`'s.
With no unseen nodes and no missing classes the two are the same and the split is
the plain one of :func:`stamen.graphs.splits.split_masks`.
"""

from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.utils import subgraph

from stamen.graphs.splits import split_masks

SETTINGS = ("seen", "unseen-node", "missing-class", "new-client")


def missing_classes(y: torch.Tensor, num_classes: int, count: int, seed: int) -> torch.Tensor:
    """The ``count`` classes with the fewest (but some) nodes in ``y``, ties broken by ``seed``.

    A client keeps at least one class: with ``c`` classes present, at most ``c - 1`` are withheld.
    """
    if count < 0:
        raise ValueError(f"missing-classes must be >= 0, got {count}")
    sizes = torch.bincount(y, minlength=num_classes)
    present = torch.nonzero(sizes > 0).flatten()
    count = min(count, present.numel() - 1)
    tie_break = torch.randperm(present.numel(), generator=torch.Generator().manual_seed(seed))
    order = torch.argsort(sizes[present][tie_break] * present.numel() + torch.arange(present.numel()), stable=True)
    return present[tie_break][order][:count].sort().values


def with_settings(
    sub: Data, train_frac: float, val_frac: float, unseen_node_frac: float, num_missing: int, seed: int
) -> Data:
    """Give the client subgraph ``sub`` its training graph, split and evaluation masks (see module doc)."""
    if not 0 <= unseen_node_frac < 1:
        raise ValueError(f"unseen-node-frac must lie in [0, 1), got {unseen_node_frac}")
    num_nodes = int(sub.num_nodes)
    generator = torch.Generator().manual_seed(seed)
    unseen = torch.zeros(num_nodes, dtype=torch.bool)
    unseen[torch.randperm(num_nodes, generator=generator)[: int(unseen_node_frac * num_nodes)]] = True
    withheld = torch.zeros(int(sub.num_classes), dtype=torch.bool)
    withheld[missing_classes(sub.y, int(sub.num_classes), num_missing, seed)] = True

    labelled = ~unseen & ~withheld[sub.y]
    train, val, test = (torch.zeros(num_nodes, dtype=torch.bool) for _ in range(3))
    index = torch.nonzero(labelled).flatten()
    masks = split_masks(index.numel(), train_frac, val_frac, seed=seed)
    for full, part in zip((train, val, test), masks):
        full[index[part]] = True
    # A class with no training label left (a rare class split into val/test) is missing too.
    trained = torch.zeros_like(withheld)
    trained[sub.y[train]] = True
    missing = ~trained[sub.y]

    if unseen.any():
        edge_index, _ = subgraph(torch.nonzero(~unseen).flatten(), sub.edge_index, num_nodes=num_nodes)
    else:  # every node seen: the training graph is the whole subgraph (what `subgraph` would copy, shared)
        edge_index = sub.edge_index
    out = sub.clone()
    out.full_edge_index = sub.edge_index
    out.edge_index = edge_index
    out.train_mask, out.val_mask, out.test_mask = train, val, test
    out.unseen_mask = unseen & ~missing
    out.missing_mask = missing
    return out
