"""``wash`` over messages: statistics from the clients, the edit solved here, lambda chosen with them.

1. ``wash-statistics`` query (the trained weights go with it): every answering client
   replies with ``d x d`` and ``d x C`` sums over its keys (:mod:`stamen.client.unlearning`); their
   shapes are checked (:func:`check_statistics`), so no node-level rows can arrive unnoticed.
2. The server sums them and lists candidate edits (:func:`stamen.unlearn.wash.solve_edit` for the
   held-out rule's :math:`\\lambda` grid); a ``wash-heldout`` query returns, per client, how
   many of its validation predictions each edit changes; the smallest :math:`\\lambda` within
   the tolerance wins (:func:`stamen.unlearn.wash.smallest_within`), as in :func:`stamen.unlearn.wash.wash`.
3. The head is edited by :func:`stamen.unlearn.wash.edited_head`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from flwr.app import Array, ArrayRecord, RecordDict

from stamen.contract import protocol as p
from stamen.server.loop import exchange
from stamen.server.unlearning.base import MethodResult, UnlearningJob, UnlearningMethod
from stamen.server.unlearning.rollcall import query

if TYPE_CHECKING:
    import torch

HEAD_WEIGHT, HEAD_BIAS = "head.weight", "head.bias"


def check_statistics(record: ArrayRecord, dim: int, num_outputs: int) -> dict[str, np.ndarray]:
    """The three sums of a client's reply as float64 arrays, after checking they are exactly
    ``d x d``, ``d x d`` and ``d x C`` (anything else could carry node-level rows)."""
    # on use: torch, torch_geometric stay out of this module's import
    import torch

    # on use: torch, torch_geometric stay out of this module's import
    from stamen.unlearn.wash import check_statistic

    expected = {p.KEEP_GRAM: (dim, dim), p.FORGET_GRAM: (dim, dim), p.FORGET_CROSS: (dim, num_outputs)}
    if set(record) != set(expected):
        raise RuntimeError(f"wash statistics must hold exactly {sorted(expected)}, got {sorted(record)}")
    arrays = {name: record[name].numpy() for name in expected}
    for name, shape in expected.items():
        try:
            check_statistic(name, torch.from_numpy(arrays[name]), shape)
        except ValueError as error:
            raise RuntimeError(f"wash statistics {error}") from None
    return arrays


def edited_arrays(arrays: ArrayRecord, delta: torch.Tensor) -> ArrayRecord:
    """``arrays`` with the head edited by ``delta`` (:func:`stamen.unlearn.wash.edited_head`, the in-process edit)."""
    # on use: torch, torch_geometric stay out of this module's import
    from stamen.unlearn.wash import edited_head

    state = arrays.to_torch_state_dict()
    state[HEAD_WEIGHT], state[HEAD_BIAS] = edited_head(state[HEAD_WEIGHT], state[HEAD_BIAS], delta)
    head = (HEAD_WEIGHT, HEAD_BIAS)
    return ArrayRecord({name: Array(state[name].numpy()) if name in head else array for name, array in arrays.items()})


class Wash(UnlearningMethod):
    """The closed-form head edit (:mod:`stamen.unlearn.wash`) from the clients' statistics."""

    name = "wash"

    def run(self, job: UnlearningJob) -> MethodResult:
        import torch  # the solver's linear algebra loads only when a run forgets

        # on use: torch, torch_geometric stay out of this module's import
        from stamen.unlearn.wash import (
            EditStatistics,
            WashConfig,
            candidate_lambdas,
            smallest_within,
            solve_edit,
            total,
        )

        arrays, request = job.arrays, job.request
        num_outputs, hidden = arrays[HEAD_WEIGHT].shape
        nodes = job.answering()
        replies = exchange(
            job.grid,
            query(p.WASH_STATISTICS_QUERY, request, arrays, nodes),
            job.timeout,
            len(nodes),  # every client that answered the roll call: a holder's statistics cannot be left out
            "unlearning (wash statistics)",
            health=job.health,
        )
        stats = []
        for reply in replies:
            sums = check_statistics(reply.content[p.WASH_STATISTICS], hidden + 1, num_outputs)
            metrics = reply.content[p.METRICS]
            stats.append(
                EditStatistics(
                    *(torch.from_numpy(sums[name]) for name in (p.KEEP_GRAM, p.FORGET_GRAM, p.FORGET_CROSS)),
                    num_keep=int(metrics[p.NUM_KEEP]),
                    num_forget=int(metrics[p.NUM_FORGET]),
                )
            )
        summed = total(stats)
        if summed.num_forget == 0:
            raise RuntimeError(f"unlearn-request {request} selects no training nodes on any client")
        lambdas = candidate_lambdas(summed)
        deltas = [solve_edit(summed, lam) for lam in lambdas]
        edits = ArrayRecord({f"edit-{i}": Array(delta.numpy()) for i, delta in enumerate(deltas)})
        answers = exchange(
            job.grid,
            query(p.WASH_HELDOUT_QUERY, request, arrays, nodes, RecordDict({p.WASH_EDITS: edits})),
            job.timeout,
            min(job.config.min_clients, len(nodes)),
            "unlearning (held-out check)",
            health=job.health,
        )
        counts = [a.content[p.METRICS] for a in answers]
        changed = [sum(int(m[f"{p.CHANGED}-{i}"]) for m in counts) for i in range(len(lambdas))]
        counted = sum(int(m[p.COUNTED]) for m in counts)
        lam = smallest_within(lambdas, changed, counted, WashConfig().tolerance)
        delta = deltas[lambdas.index(lam)]
        weight = np.concatenate([arrays[HEAD_WEIGHT].numpy(), arrays[HEAD_BIAS].numpy()[:, None]], axis=1)
        info = {
            "lambda": lam,
            "edit_ratio": float(np.linalg.norm(delta.numpy()) / np.linalg.norm(weight)),
            "num_keep": summed.num_keep,
            "num_forget": summed.num_forget,
            "heldout_changed": changed[lambdas.index(lam)],
            "heldout_changed_per_lambda": changed,
            "heldout_counted": counted,
        }
        return MethodResult(edited_arrays(arrays, delta), {self.name: info})
