r"""``federaser``: replay training from the clients' recorded updates (after FedEraser, Liu et al., IWQoS 2021).

**Recording.** While the original model trains by FedAvg, the server keeps, for every
client :math:`i` and every window :math:`b` of :math:`\Delta` rounds, the client's summed
update :math:`U_i^b = \sum_{t \in b} (\theta_i^t - \theta^{t-1})` (its weights after local
training minus the global weights it started from), and the initial weights
:math:`\theta^0`. With :math:`n_i` training nodes, FedAvg gives
:math:`\theta^T = \theta^0 + \sum_b \sum_i n_i U_i^b / \sum_i n_i`.

**Erasing.** Replay from :math:`\theta^0` on the remaining federation, one calibration round
per window: every client :math:`i` that stays trains from the replayed weights
:math:`\tilde\theta^b` on its remaining subgraph (keeping its Adam moments across calibration
rounds), giving its calibration update :math:`\tilde U_i^b`. Each client's update keeps the
calibration's direction and takes the client's recorded magnitude, per parameter tensor
:math:`k`, and the server averages them as FedAvg would:

.. math::
    \tilde\theta^{b+1}_k = \tilde\theta^b_k + \frac{1}{\sum_{i \in S} \tilde n_i}
        \sum_{i \in S} \tilde n_i \,\lVert U^b_{i,k} \rVert \,
        \frac{\tilde U^b_{i,k}}{\lVert \tilde U^b_{i,k} \rVert},

with :math:`S` the clients that stay and :math:`\tilde n_i` their remaining training nodes
(a ``nodes:`` request's client stays; only its recorded magnitudes are used, never its
recorded directions). The forgotten data sets the direction of no step, so what the replay
learns of :math:`D_f` is what the remaining data teaches (a ``nodes:`` request's client
lends its step lengths, which its forgotten nodes helped set); the cost is
:math:`\lceil T/\Delta \rceil` rounds instead of retraining's :math:`T`.

Adaptation: FedEraser keeps the updates of every :math:`\Delta`-th round and calibrates
with half the local epochs; here the window *sums* every round's update (nothing of the
trajectory is dropped) and calibration uses the run's local epochs. The price is memory:
one model-sized tensor set per client and window, kept by the server. A client not sampled
in a window has no update there and takes no part in that window's replay.

The federated training and the calibration rounds are the app's round loop
(:mod:`stamen.server.unlearning.federaser`, the same for a Flower run and the in-process
experiment); here are the math: :class:`UpdateHistory` records, :func:`replay_step`
rescales and averages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import torch

State = dict[str, torch.Tensor]

DEFAULT_WINDOW = 5


@dataclass
class UpdateHistory:
    """The clients' summed updates per window of ``window`` rounds, and the initial weights.

    Attributes:
        initial: :math:`\\theta^0`.
        window: :math:`\\Delta`, rounds per window.
        windows: ``windows[b][i]`` is :math:`U_i^b` for every client ``i`` (a partition id)
            that trained in window ``b`` (floating-point tensors only).
    """

    initial: State
    window: int = DEFAULT_WINDOW
    windows: list[dict[int, State]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"the FedEraser window must be at least 1 round, got {self.window}")

    def record(self, server_round: int, start: State, states: Mapping[int, State]) -> None:
        """Add round ``server_round``'s client updates (``states[i]`` minus ``start``) to their window."""
        index = (server_round - 1) // self.window
        while len(self.windows) <= index:
            self.windows.append({})
        window = self.windows[index]
        for client, state in states.items():
            summed = window.setdefault(
                client, {k: torch.zeros_like(v) for k, v in start.items() if v.is_floating_point()}
            )
            for key in summed:
                summed[key] += state[key] - start[key]


def weighted_average(states: list[State], weights: list[int]) -> State:
    """:math:`\\sum_i n_i \\theta_i / \\sum_i n_i`: FedAvg's aggregate."""
    total = sum(weights)
    if not states or total <= 0:
        raise ValueError("nothing to average: no client state with a positive weight")
    return {key: sum(s[key] * w for s, w in zip(states, weights)) / total for key in states[0]}


def check_clients(history: UpdateHistory, clients: Iterable[int]) -> None:
    """Fail clearly when a client that stays has no recorded update (a history of another federation)."""
    recorded = set().union(*history.windows) if history.windows else set()
    unknown = sorted(set(clients) - recorded)
    if unknown:
        raise ValueError(
            f"the update history holds no update of client(s) {unknown}; was it recorded on this federation?"
        )


def rescaled_update(start: State, calibrated: State, recorded: State) -> State:
    """A client's calibrated weights with, per tensor, the step length it recorded in training.

    ``start + ||recorded|| * (calibrated - start) / ||calibrated - start||`` for every tensor
    ``recorded`` holds; the others (integer buffers) as calibrated.
    """
    out = {}
    for key, value in start.items():
        if key in recorded:
            direction = calibrated[key] - value
            out[key] = value + recorded[key].norm() * direction / direction.norm().clamp_min(1e-12)
        else:
            out[key] = calibrated[key].clone()
    return out


def replay_step(start: State, calibrated: Iterable[tuple[int, State, int]], window: dict[int, State]) -> State | None:
    """One window of the replay from ``start``: the calibrated weights of each ``(client, state,
    training nodes)`` rescaled to the client's recorded step lengths (:func:`rescaled_update`),
    averaged by training nodes. A client not sampled in this window of training takes no part;
    ``None`` when no client was."""
    updates, weights = [], []
    for client, state, weight in calibrated:
        if client in window:
            updates.append(rescaled_update(start, state, window[client]))
            weights.append(weight)
    return weighted_average(updates, weights) if updates else None
