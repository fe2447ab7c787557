r"""Link prediction's edge splits: a client's own edges, and the edges the partition cut.

**A client's split** (:func:`split_links`). The client's subgraph is undirected (every edge
stored in both directions); its undirected edges :math:`E` (pairs :math:`u < v`, self-loops
dropped) are shuffled by the seed and cut into test (``test_frac``), validation
(``val_frac``) and training edges (the rest). Only the training edges, in both
directions, form the *message-passing graph* the encoder sees: a held-out edge is never
in the graph that scores it (no leakage). Beside each held-out set lie as many seeded
*non-edges*: pairs :math:`u < v` of the client's nodes joined by no edge of :math:`E`
(held-out edges included), distinct, the validation and test ones disjoint. A client
with too few non-edges gets as many as there are.

**The cut edges** (:func:`cut_links`). An edge whose ends lie in different clients is in
no client's subgraph: no client trains or is scored on it. Each cut edge is assigned to
the lower partition id of its two ends' clients; client :math:`i` scores its cut edges
against as many seeded non-edges :math:`(a, b)`, :math:`a` in client :math:`i` and
:math:`b` in a client with a higher id, joined by no edge of the whole graph. Both are
scored on the **whole graph's nodes with the union of every client's training edges**
(global node ids): what the federation saw in training, with no cut and no held-out edge
in it.

Every random choice takes a seed; the same seed gives the same split on every machine.
Plain numpy on ``edge_index`` tensors; no torch autograd, no Flower.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass(frozen=True)
class LinkSplit:
    """One client's edges for link prediction (local node ids; pairs are ``(2, m)`` long tensors, ``u < v``).

    Attributes:
        message_edges: the training edges in both directions: the graph the encoder reads.
        train: the training edges (positives of the loss).
        val, val_neg: validation edges and as many non-edges.
        test, test_neg: test edges and as many non-edges.
    """

    message_edges: Tensor
    train: Tensor
    val: Tensor
    val_neg: Tensor
    test: Tensor
    test_neg: Tensor

    def to(self, device: torch.device) -> LinkSplit:
        return LinkSplit(*(getattr(self, name).to(device) for name in self.__dataclass_fields__))


@dataclass(frozen=True)
class CutLinks:
    """The cut edges one client scores (global node ids), and the graph they are scored on.

    Attributes:
        edges: ``(2, m)`` cut edges assigned to the client (``u`` in the client, ``u < v`` not implied).
        non_edges: ``(2, m')`` seeded non-edges from the client to clients of higher ids.
        message_edges: the union of every client's training edges, both directions, global ids.
    """

    edges: Tensor
    non_edges: Tensor
    message_edges: Tensor

    def to(self, device: torch.device) -> CutLinks:
        return CutLinks(self.edges.to(device), self.non_edges.to(device), self.message_edges.to(device))


def undirected_edges(edge_index: Tensor) -> np.ndarray:
    """The distinct undirected edges of ``edge_index`` as an ``(m, 2)`` array of ``u < v``, sorted."""
    src, dst = edge_index.cpu().numpy().astype(np.int64)
    low, high = np.minimum(src, dst), np.maximum(src, dst)
    keep = low != high
    pairs = np.unique(np.stack([low[keep], high[keep]], axis=1), axis=0)
    return pairs.reshape(-1, 2)


def split_links(edge_index: Tensor, num_nodes: int, val_frac: float, test_frac: float, seed: int) -> LinkSplit:
    """A client's seeded split of its own edges (see the module docstring)."""
    if not (0 < val_frac < 1 and 0 < test_frac < 1 and val_frac + test_frac < 1):
        raise ValueError(f"link splits need 0 < val, test and val + test < 1, got {val_frac} and {test_frac}")
    rng = np.random.default_rng(seed)
    edges = undirected_edges(edge_index)
    order = rng.permutation(len(edges))
    num_test, num_val = int(test_frac * len(edges)), int(val_frac * len(edges))
    test, val, train = np.split(edges[order], [num_test, num_test + num_val])
    negatives = sample_non_edges(num_nodes, edges, num_val + num_test, rng)
    val_neg, test_neg = negatives[: min(num_val, len(negatives))], negatives[min(num_val, len(negatives)) :]
    return LinkSplit(
        message_edges=_both_directions(train),
        train=_pairs(train),
        val=_pairs(val),
        val_neg=_pairs(val_neg),
        test=_pairs(test),
        test_neg=_pairs(test_neg),
    )


def sample_non_edges(num_nodes: int, edges: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """Up to ``count`` distinct pairs ``u < v`` of ``num_nodes`` nodes, none in ``edges`` (``(m, 2)``, ``u < v``).

    Rejection sampling in batches while non-edges are plentiful; when they are scarce (a
    small, dense subgraph), every non-edge is listed and ``count`` of them drawn.
    """
    possible = num_nodes * (num_nodes - 1) // 2
    free = possible - len(edges)
    count = min(count, free)
    if count <= 0:
        return np.empty((0, 2), dtype=np.int64)
    taken = set((edges[:, 0] * num_nodes + edges[:, 1]).tolist())
    if count > free // 4:
        codes = np.array([c for c in _all_pair_codes(num_nodes) if c not in taken], dtype=np.int64)
        chosen = rng.choice(codes, size=count, replace=False)
        return np.stack([chosen // num_nodes, chosen % num_nodes], axis=1)
    found: list[int] = []
    seen: set[int] = set()
    while len(found) < count:
        u, v = rng.integers(0, num_nodes, size=(2, 2 * (count - len(found)) + 16))
        for a, b in zip(np.minimum(u, v).tolist(), np.maximum(u, v).tolist()):
            code = a * num_nodes + b
            if a != b and code not in taken and code not in seen:
                seen.add(code)
                found.append(code)
                if len(found) == count:
                    break
    chosen = np.array(found, dtype=np.int64)
    return np.stack([chosen // num_nodes, chosen % num_nodes], axis=1)


def cut_links(
    graph_edges: Tensor,
    parts: Sequence[np.ndarray],
    client_splits: Sequence[LinkSplit],
    partition_id: int,
    seed: int,
) -> CutLinks:
    """Client ``partition_id``'s cut edges and non-edges, and the training graph they are scored on (global ids).

    ``client_splits[i]`` is client ``i``'s :class:`LinkSplit` over the nodes ``parts[i]`` (in order).
    """
    num_nodes = int(sum(len(part) for part in parts))
    owner = np.empty(num_nodes, dtype=np.int64)
    for index, part in enumerate(parts):
        owner[part] = index
    edges = undirected_edges(graph_edges)
    lower = np.minimum(owner[edges[:, 0]], owner[edges[:, 1]])
    cut = edges[(owner[edges[:, 0]] != owner[edges[:, 1]]) & (lower == partition_id)]
    cut = np.where((owner[cut[:, 0]] == partition_id)[:, None], cut, cut[:, ::-1])  # the client's end first
    ours = np.asarray(parts[partition_id], dtype=np.int64)
    theirs = np.flatnonzero(owner > partition_id)
    non_edges = _cross_non_edges(ours, theirs, edges, num_nodes, len(cut), np.random.default_rng(seed))
    training = [np.asarray(parts[i])[split.train.numpy().T] for i, split in enumerate(client_splits)]
    union = np.concatenate(training) if training else np.empty((0, 2), dtype=np.int64)
    return CutLinks(edges=_pairs(cut), non_edges=_pairs(non_edges), message_edges=_both_directions(union))


def _cross_non_edges(
    ours: np.ndarray, theirs: np.ndarray, edges: np.ndarray, num_nodes: int, count: int, rng: np.random.Generator
) -> np.ndarray:
    """Up to ``count`` distinct pairs ``(a, b)``, ``a`` from ``ours``, ``b`` from ``theirs``, joined by no edge."""
    if count == 0 or len(ours) == 0 or len(theirs) == 0:
        return np.empty((0, 2), dtype=np.int64)
    taken = set((edges[:, 0] * num_nodes + edges[:, 1]).tolist())
    count = min(count, len(ours) * len(theirs) - len(taken))
    found: list[tuple[int, int]] = []
    seen: set[int] = set()
    for _ in range(64):  # non-edges between parts are plentiful; a bounded number of batches
        a = ours[rng.integers(0, len(ours), size=2 * count + 16)]
        b = theirs[rng.integers(0, len(theirs), size=2 * count + 16)]
        for x, y in zip(a.tolist(), b.tolist()):
            code = min(x, y) * num_nodes + max(x, y)
            if code not in taken and code not in seen:
                seen.add(code)
                found.append((x, y))
                if len(found) == count:
                    return np.array(found, dtype=np.int64)
    return np.array(found, dtype=np.int64).reshape(-1, 2)


def _all_pair_codes(num_nodes: int) -> list[int]:
    u, v = np.triu_indices(num_nodes, k=1)
    return (u.astype(np.int64) * num_nodes + v).tolist()


def _pairs(pairs: np.ndarray) -> Tensor:
    return torch.as_tensor(np.ascontiguousarray(pairs.reshape(-1, 2).T), dtype=torch.long)


def _both_directions(pairs: np.ndarray) -> Tensor:
    pairs = pairs.reshape(-1, 2)
    return torch.as_tensor(np.concatenate([pairs, pairs[:, ::-1]]).T.copy(), dtype=torch.long)
