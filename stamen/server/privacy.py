r"""Client-level DP on the server: Flower's DP strategy wrappers, an accountant, epsilon per round.

With ``privacy='client-dp'`` each sampled client's update
:math:`\Delta_k = \mathbf{w}_k - \mathbf{w}^{t}` is clipped to norm :math:`C` (on the
server, or on the client by Flower's clipping mods), the server averages the
:math:`m` clipped updates with equal weights and adds
:math:`\mathcal{N}(0, (\sigma C / m)^2 \mathbf{I})` (DP-FedAvg, McMahan et al., 2018).
Neighbouring federations differ in one client's whole data. A round is one subsampled
Gaussian mechanism with rate :math:`q = m / N` (:math:`N` clients) and noise
multiplier :math:`\sigma`; the RDP accountant (Opacus's) composes the rounds and
converts to :math:`(\varepsilon, \delta)` at ``target-delta``. Flower samples a fixed
number of clients without replacement; the Poisson analysis at the same rate is the
usual approximation and is exact at ``fraction-train = 1`` (:math:`q = 1`, no
amplification). Adaptive clipping spends part of the budget on the noisy clipped
count; Flower splits :math:`\sigma` so that both together equal one Gaussian
mechanism of multiplier :math:`\sigma` (Andrew et al., 2021), which is what is accounted.

Adaptive clipping follows Andrew et al.'s geometric rule. With :math:`\tilde f` the
noisy fraction of clipped updates and :math:`q` the target clipped fraction,

.. math::

    C \leftarrow C \exp\big(\eta\,(\tilde f - q)\big)
      = C \exp\big(-\eta\,(\tilde b - \gamma)\big),\qquad
    \tilde b = 1 - \tilde f,\ \gamma = 1 - q,

so :math:`C` grows while more updates are clipped than wanted and tracks the
:math:`\gamma`-quantile of the update norms. Flower 1.42's wrappers use the opposite
sign (they shrink :math:`C` when too many updates are clipped, down to zero) and
calibrate the round's noise to the norm *after* this update instead of the norm that
clipped the round; :class:`AdaptiveRuleFix` corrects both (tests/server/test_client_level_privacy.py).

The ServerApp stays free of PyTorch: Opacus is imported here only for client-DP runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MessageType, RecordDict
from flwr.serverapp import Grid
from flwr.serverapp.strategy import (
    DifferentialPrivacyClientSideAdaptiveClipping,
    DifferentialPrivacyClientSideFixedClipping,
    DifferentialPrivacyServerSideAdaptiveClipping,
    DifferentialPrivacyServerSideFixedClipping,
    FedAvg,
    Strategy,
)

from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.models.opacus_quiet import opacus_quietly
from stamen.server.transport import send_and_receive


# Flower 1.42's noise of its DP wrappers (flwr.supercore.differential_privacy, not public API), copied: the same
# NumPy calls in the same order, so the same numbers (tests/test_flower_internals.py compares them with Flower's).
def compute_stdv(noise_multiplier: float, clipping_norm: float, num_sampled_clients: int) -> float:
    """The noise's standard deviation, sigma C / m: Flower's ``compute_stdv``."""
    return float((noise_multiplier * clipping_norm) / num_sampled_clients)


def add_gaussian_noise_inplace(arrays: list[np.ndarray], std_dev: float) -> None:
    """Add N(0, std_dev^2) noise to each array in place, drawn from NumPy's global generator: Flower's function."""
    for array in arrays:
        noise = np.random.normal(0, std_dev, array.shape).astype(array.dtype)
        array += noise


class AdaptiveRuleFix:
    """Andrew et al.'s clipping-norm update and noise calibration for Flower's adaptive wrappers.

    Mixed in before a Flower adaptive wrapper, it replaces two of its methods: the
    geometric update (Flower's sign is reversed, see the module docstring) and the noise,
    calibrated to :attr:`round_clipping_norm`, the norm the round's updates were clipped to.
    """

    clipping_norm: float
    clip_norm_lr: float
    target_clipped_quantile: float
    noise_multiplier: float
    num_sampled_clients: int
    round_clipping_norm: float | None = None

    def _geometric_update(self, clipped_fraction: float) -> None:
        self.round_clipping_norm = self.clipping_norm
        self.clipping_norm *= math.exp(self.clip_norm_lr * (clipped_fraction - self.target_clipped_quantile))

    def _add_noise_to_aggregated_arrays(self, aggregated: ArrayRecord) -> ArrayRecord:
        norm = self.clipping_norm if self.round_clipping_norm is None else self.round_clipping_norm
        arrays = aggregated.to_numpy_ndarrays()
        add_gaussian_noise_inplace(arrays, compute_stdv(self.noise_multiplier, norm, self.num_sampled_clients))
        return ArrayRecord({k: Array(np.asarray(v)) for k, v in zip(aggregated.keys(), arrays, strict=True)})


class ServerSideAdaptiveClipping(AdaptiveRuleFix, DifferentialPrivacyServerSideAdaptiveClipping):
    """Flower's server-side adaptive clipping with :class:`AdaptiveRuleFix`."""


class ClientSideAdaptiveClipping(AdaptiveRuleFix, DifferentialPrivacyClientSideAdaptiveClipping):
    """Flower's client-side adaptive clipping with :class:`AdaptiveRuleFix`."""


WRAPPERS = {
    "server-fixed": DifferentialPrivacyServerSideFixedClipping,
    "client-fixed": DifferentialPrivacyClientSideFixedClipping,
    "server-adaptive": ServerSideAdaptiveClipping,
    "client-adaptive": ClientSideAdaptiveClipping,
}


def sampled_clients(config: RunConfig, num_nodes: int) -> int:
    """How many clients Flower's FedAvg samples per round out of ``num_nodes``."""
    return min(num_nodes, max(int(num_nodes * config.fraction_train), config.min_clients))


def client_noise_multiplier(config: RunConfig, num_nodes: int) -> float:
    """``noise-multiplier``, or the one spending ``target-epsilon`` over ``num-server-rounds`` rounds."""
    if config.target_epsilon <= 0:
        return config.noise_multiplier

    with opacus_quietly():
        # on use: opacus stays out of this module's import
        from opacus.accountants.utils import get_noise_multiplier

    rate = sampled_clients(config, num_nodes) / num_nodes
    try:
        return get_noise_multiplier(
            target_epsilon=config.target_epsilon,
            target_delta=config.target_delta,
            sample_rate=rate,
            steps=config.num_server_rounds,
        )
    except ValueError as error:
        raise ValueError(
            f"target-epsilon={config.target_epsilon} cannot be reached in {config.num_server_rounds} rounds "
            f"at client sampling rate {rate:.3f} and delta={config.target_delta}: {error}"
        ) from error


def client_dp_epsilon(noise_multiplier: float, rate: float, rounds: int, delta: float) -> float:
    """Epsilon after ``rounds`` rounds of the subsampled Gaussian mechanism (RDP accountant)."""
    if rounds == 0:
        return 0.0

    with opacus_quietly():
        # on use: opacus stays out of this module's import
        from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    accountant.history = [(noise_multiplier, rate, rounds)]
    return accountant.get_epsilon(delta)


def client_dp_strategy(strategy: Strategy, config: RunConfig, num_nodes: int, noise_multiplier: float) -> Strategy:
    """``strategy`` (a FedAvg) averaging with equal weights, wrapped by the Flower DP wrapper of ``clipping``.

    Flower's noise :math:`\\sigma C / m` is calibrated to an equal-weight mean: a client
    weighted by its node count could move the mean by more than :math:`C / m`.
    """
    if not isinstance(strategy, FedAvg):
        raise ValueError(f"privacy='client-dp' wraps a FedAvg-family strategy, got {type(strategy).__name__}")
    strategy.weighted_by_key = p.UNIT_WEIGHT
    sampled = sampled_clients(config, num_nodes)
    wrapper = WRAPPERS[config.clipping]
    if config.clipping.endswith("adaptive"):
        return wrapper(strategy, noise_multiplier, sampled, initial_clipping_norm=config.clipping_norm)
    return wrapper(strategy, noise_multiplier, config.clipping_norm, sampled)


def initial_arrays(grid: Grid, timeout: float) -> ArrayRecord:
    """The seeded initial model, asked of one client (every client builds the same one).

    Clipping bounds the *update* of a client, so the server must know the weights
    the update starts from already in round 1 (``federaser`` replays from them too).
    """
    node = sorted(grid.get_node_ids())[0]
    content = RecordDict({p.CONFIG: ConfigRecord({p.QUERY: p.INITIAL_MODEL_QUERY})})
    message = Message(content=content, dst_node_id=node, message_type=MessageType.QUERY)
    (reply,) = send_and_receive(grid, [message], timeout)
    if reply.has_error():
        raise RuntimeError(f"node {node} could not send the initial model: {reply.error.reason}")
    return reply.content[p.ARRAYS]


@dataclass
class PrivateSetup:
    """How a run's privacy setting changes the round loop.

    Attributes:
        strategy: the strategy to drive (wrapped for client-level DP).
        initial: the weights round 1 sends (None: none, clients build the seeded model).
        epsilon_after: client-level epsilon after a number of rounds (None without client-level DP).
    """

    strategy: Strategy
    initial: ArrayRecord | None = None
    epsilon_after: Callable[[int], float] | None = None


def private_setup(strategy: Strategy, config: RunConfig, grid: Grid) -> PrivateSetup:
    """Wrap ``strategy`` for ``privacy='client-dp'``; other settings leave it as it is.

    The population :math:`N` is the nodes connected now (all of them, in a simulation).
    """
    if config.privacy != "client-dp":
        return PrivateSetup(strategy)
    num_nodes = len(list(grid.get_node_ids()))
    sigma = client_noise_multiplier(config, num_nodes)
    wrapped = client_dp_strategy(strategy, config, num_nodes, sigma)
    rate = sampled_clients(config, num_nodes) / num_nodes

    def epsilon_after(rounds: int) -> float:
        return client_dp_epsilon(sigma, rate, rounds, config.target_delta)

    return PrivateSetup(wrapped, initial_arrays(grid, config.round_timeout), epsilon_after)


def epsilon_figures(spent: dict[int, float]) -> dict[str, Any]:
    """A round row's privacy figures from every client's epsilon so far (by partition id)."""
    if not spent:
        return {}
    values = list(spent.values())
    return {
        "epsilon_max": max(values),
        "epsilon_mean": sum(values) / len(values),
        "epsilon": {str(k): spent[k] for k in sorted(spent)},
    }
