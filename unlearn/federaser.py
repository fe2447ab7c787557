r"""``federaser``: replay training from the clients' recorded updates (after FedEraser, Liu et al., IWQoS 2021).

**Recording.** While the original model trains by FedAvg, the server keeps, for every
client :math:`i` and every window :math:`b` of :math:`\Delta` rounds, the client's summed
update :math:`U_i^b = \sum_{t \in b} (\theta_i^t - \theta^{t-1})` (its weights after local
training minus the global weights it started from), and the initial weights
:math:`\theta^0`. With :math:`n_i` training nodes, FedAvg gives
:math:`\theta^T = \theta^0 + \sum_b \sum_i n_i U_i^b / \sum_i n_i`.

**Erasing.** Replay from :math:`\theta^0` on the remaining federation, one calibration round
per window: the clients that stay train from the replayed weights :math:`\tilde\theta^b` on
their remaining subgraphs (keeping their Adam moments across calibration rounds), giving
the FedAvg update :math:`\tilde U^b`. The step takes the calibration's direction and the
staying clients' recorded magnitude, per parameter tensor :math:`k`:

.. math::
    \tilde\theta^{b+1}_k = \tilde\theta^b_k + \lVert \bar U^b_k \rVert \,
        \frac{\tilde U^b_k}{\lVert \tilde U^b_k \rVert},
    \qquad \bar U^b = \frac{\sum_{i \in S} n_i U_i^b}{\sum_{i \in S} n_i},

with :math:`S` the clients that stay (a ``nodes:`` request's client stays; only its
recorded magnitude is used, never its recorded direction). The forgotten data shapes no
step, so what the replay learns of :math:`D_f` is what the remaining data teaches; the cost
is :math:`\lceil T/\Delta \rceil` rounds instead of retraining's :math:`T`.

Adaptation: FedEraser keeps the updates of every :math:`\Delta`-th round and calibrates
with half the local epochs; here the window *sums* every round's update (nothing of the
trajectory is dropped) and calibration uses the run's local epochs. The price is memory:
one model-sized tensor set per client and window, kept by the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from models import NodeClassifier
from models.fedavg_loop import LocalClients, State, fedavg_rounds
from models.run_config import RunConfig
from unlearn.baselines import new_model
from unlearn.requests import ForgetSplit

DEFAULT_WINDOW = 5


@dataclass
class UpdateHistory:
    """The clients' summed updates per window of ``window`` rounds, and the initial weights.

    Attributes:
        initial: :math:`\\theta^0`.
        window: :math:`\\Delta`, rounds per window.
        weights: each client's training-node count :math:`n_i` during training.
        windows: ``windows[b][i]`` is :math:`U_i^b` (floating-point tensors only).
    """

    initial: State
    window: int
    weights: list[int]
    windows: list[list[State]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"the FedEraser window must be at least 1 round, got {self.window}")

    def record(self, server_round: int, start: State, states: list[State]) -> None:
        """Add round ``server_round``'s client updates (``states`` minus ``start``) to their window."""
        if len(states) != len(self.weights):
            raise ValueError(f"{len(states)} client states for a history of {len(self.weights)} clients")
        index = (server_round - 1) // self.window
        if index == len(self.windows):
            zeros = {k: torch.zeros_like(v) for k, v in start.items() if v.is_floating_point()}
            self.windows.append([{k: v.clone() for k, v in zeros.items()} for _ in states])
        for summed, state in zip(self.windows[index], states):
            for key in summed:
                summed[key] += state[key] - start[key]

    def stayers_update(self, index: int, stayers: list[int]) -> State:
        """:math:`\\bar U^b`: the staying clients' recorded updates of window ``index``, averaged by :math:`n_i`."""
        total = sum(self.weights[i] for i in stayers)
        if total == 0:
            raise ValueError("the clients that stay had no training nodes during training")
        window = self.windows[index]
        return {key: sum(window[i][key] * self.weights[i] for i in stayers) / total for key in window[stayers[0]]}


def train_with_history(
    clients: list, config: RunConfig, seed: int, window: int = DEFAULT_WINDOW
) -> tuple[NodeClassifier, UpdateHistory]:
    """FedAvg from scratch over ``clients`` (as :func:`unlearn.baselines.fedavg_train`), recording the updates."""
    model = new_model(config, clients[0].num_features, int(clients[0].num_classes), seed)
    history = UpdateHistory(
        initial={k: v.detach().clone() for k, v in model.state_dict().items()},
        window=window,
        weights=[int(c.train_mask.sum()) for c in clients],
    )
    torch.manual_seed(seed)
    fedavg_rounds(
        model,
        clients,
        config.num_server_rounds,
        config.local_epochs,
        config.lr,
        config.weight_decay,
        on_client_states=history.record,
    )
    return model, history


def federaser(history: UpdateHistory, split: ForgetSplit, config: RunConfig, seed: int) -> NodeClassifier:
    """Replay ``history`` without the forgotten data: one calibration round per window on ``split.remaining``."""
    if len(history.weights) != len(split.original):
        raise ValueError(
            f"the update history has {len(history.weights)} clients but the federation has {len(split.original)}"
        )
    torch.manual_seed(seed)
    remaining = split.remaining
    model = new_model(config, remaining[0].num_features, split.num_classes, seed)
    model.load_state_dict(history.initial)
    calibration = LocalClients(model, remaining, config.local_epochs, config.lr, config.weight_decay)
    for index in range(len(history.windows)):
        start = {key: value.detach().clone() for key, value in model.state_dict().items()}
        calibrated = calibration.average(calibration.train(start))
        recorded = history.stayers_update(index, split.remaining_clients)
        step = {}
        for key, value in start.items():
            if key in recorded:
                direction = calibrated[key] - value
                value = value + recorded[key].norm() * direction / direction.norm().clamp_min(1e-12)
            step[key] = value
        model.load_state_dict(step)
    model.eval()
    return model
