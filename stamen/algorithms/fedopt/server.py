r"""FedAdam, FedYogi, FedAdagrad: Flower's server-side adaptive optimisers (Reddi et al., ICLR 2021).

Adaptive Federated Optimization (Reddi, Charles, Zaheer, Garrett, Rush, Konečný, Kumar,
McMahan; ICLR 2021) treats the clients' average as a pseudo-gradient and steps the
global model with an adaptive optimiser on the server. With :math:`w_{t-1}` the weights
sent in round :math:`t`, :math:`\bar w_t` the clients' weighted average (FedAvg's,
weighted by training nodes) and :math:`\Delta_t = \bar w_t - w_{t-1}`, per coordinate:

.. math::

    m_t &= \beta_1 m_{t-1} + (1 - \beta_1)\,\Delta_t \\
    v_t &= v_{t-1} + \Delta_t^2 && \text{(FedAdagrad; } \beta_1 = 0\text{)} \\
    v_t &= v_{t-1} - (1 - \beta_2)\,\Delta_t^2\,\operatorname{sign}(v_{t-1} - \Delta_t^2) && \text{(FedYogi)} \\
    v_t &= \beta_2 v_{t-1} + (1 - \beta_2)\,\Delta_t^2 && \text{(FedAdam)} \\
    w_t &= w_{t-1} + \eta_t\, m_t / (\sqrt{v_t} + \tau),

with :math:`m_0 = v_0 = 0`, :math:`\eta_t = \eta` for FedAdagrad and FedYogi and FedAdam's
bias-corrected :math:`\eta_t = \eta \sqrt{1 - \beta_2^{t+1}} / (1 - \beta_1^{t+1})`
(Flower's choice; the paper keeps :math:`\eta`). Keys: :math:`\eta` = ``fedopt-eta``,
:math:`\beta_1, \beta_2` = ``fedopt-beta-1``, ``fedopt-beta-2`` (FedAdam, FedYogi),
:math:`\tau` = ``fedopt-tau``.

Stamen keeps Flower 1.42's :math:`\beta_2 = 0.99` but takes :math:`\beta_1 = 0` (``fedopt-beta-1``'s
default; Flower's is 0.9); ``fedopt-eta`` and ``fedopt-tau`` 0 (their defaults) stand for the algorithm's
own :math:`\eta, \tau` (:data:`FEDOPT_DEFAULTS`). Flower's settings
(:math:`\eta` 0.1 for FedAdam and FedAdagrad, 0.01 for FedYogi; :math:`\tau = 10^{-3}`;
:math:`\beta_1 = 0.9`) made FedAdam diverge on Cora and csbm and FedYogi on Cora. Two causes:

- with a small :math:`\tau` a coordinate whose updates are small moves by about :math:`\eta` each round,
  far more than its clients' own step (FedYogi's :math:`v` grows by only :math:`(1 - \beta_2)\Delta^2` a
  round from 0, so for its first rounds the step is up to :math:`10\eta/\sqrt t` a coordinate);
- :math:`\Delta_t` is not a gradient but the whole step to where the clients' training went; averaging
  about :math:`1/(1 - \beta_1) = 10` of them, the model keeps moving after it arrives and rings
  (heavy-ball dynamics with a damping of :math:`\sqrt{\beta_1} \approx 0.95` a round). FedAdagrad, whose
  :math:`\beta_1` is 0, never diverged.

With :math:`\beta_1 = 0` and :math:`\eta = \tau = 0.1` FedAdam and FedYogi held on Cora and csbm over
three seeds; a coordinate whose update is well below :math:`\tau` then steps by about
:math:`(\eta/\tau)\,\Delta = \Delta` (FedAvg's step), one whose update is larger by less, at most
:math:`\eta`. Reddi et al.'s convergence analysis also takes :math:`\beta_1 = 0`. FedAdagrad keeps
Flower's settings, its best in the studies (benchmarks/tuning.md). Flower's
``eta_l`` (the clients' learning rate) is stored by Flower's strategies but never read by
them; Stamen's clients step with ``lr`` (Adam), so there is no second key for it.

Flower's strategies take :math:`w_{t-1}` from the weights each round sends. Stamen's
round 1 sends none (every client builds the seeded initial model), so round 1 asks one
client for that model (:func:`stamen.server.privacy.initial_arrays`, the query client-level DP
and FedAvgM use). The moments :math:`m, v` are server state outside the checkpoint: the
specs say these algorithms are not resumable. Client-level DP is not admitted: Flower's
DP wrappers would add their noise after the optimiser step, whose moments have seen
the noiseless average.
"""

from __future__ import annotations

from collections.abc import Iterable

from flwr.app import ArrayRecord, ConfigRecord, Message
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAdagrad, FedAdam, FedYogi, Strategy

from stamen.contract.run_config import RunConfig
from stamen.server.privacy import initial_arrays
from stamen.server.strategy_options import strategy_options


class SeededStart:
    """Mixin before a Flower FedOpt strategy: :math:`w_0` is the seeded initial model when round 1 sends none.

    Flower's FedOpt keeps the weights each ``configure_train`` sends as the point its
    step starts from; an empty record (Stamen's round 1) becomes the initial model
    asked of one client.
    """

    timeout: float
    current_arrays: dict | None

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        messages = super().configure_train(server_round, arrays, config, grid)  # type: ignore[misc]
        if len(arrays) == 0:
            self.current_arrays = {k: a.numpy() for k, a in initial_arrays(grid, self.timeout).items()}
        return messages


# The server step eta and adaptivity tau of each FedOpt algorithm where fedopt-eta / fedopt-tau are 0 (their
# defaults). Flower's (eta 0.1 FedAdam and FedAdagrad, 0.01 FedYogi; tau 1e-3; beta_1 0.9) made FedAdam diverge on
# Cora and csbm and FedYogi on Cora. The cause was the first moment: a pseudo-gradient is the step to where the
# clients' training went, and beta_1 = 0.9 averages ten of them, so the model overshoots and rings (FedAdagrad, whose
# beta_1 is 0, never did). With beta_1 = 0 (fedopt-beta-1's default) and eta = tau = 0.1 FedAdam and FedYogi held on
# Cora and csbm over three seeds (benchmarks/tuning.md); FedAdagrad keeps Flower's, its best in the studies.
FEDOPT_DEFAULTS: dict[str, tuple[float, float]] = {
    "fedadam": (0.1, 0.1),
    "fedyogi": (0.1, 0.1),
    "fedadagrad": (0.1, 1e-3),
}


def fedopt_step(config: RunConfig) -> tuple[float, float]:
    """``(eta, tau)`` of a FedOpt algorithm: ``fedopt-eta`` and ``fedopt-tau`` where given (> 0), else the
    algorithm's :data:`FEDOPT_DEFAULTS`."""
    eta, tau = FEDOPT_DEFAULTS.get(config.algorithm, FEDOPT_DEFAULTS["fedadagrad"])
    return (config.option("fedopt-eta") or eta, config.option("fedopt-tau") or tau)


class SeededFedAdam(SeededStart, FedAdam):
    """Flower's FedAdam from the seeded initial model."""


class SeededFedYogi(SeededStart, FedYogi):
    """Flower's FedYogi from the seeded initial model."""


class SeededFedAdagrad(SeededStart, FedAdagrad):
    """Flower's FedAdagrad from the seeded initial model."""


def _fedopt(kind: type[FedAdam | FedYogi | FedAdagrad], config: RunConfig, **options: float) -> Strategy:
    """``kind`` with the ``fedopt-*`` keys (``fedopt-eta``, ``fedopt-tau`` 0: the algorithm's default)."""
    eta, tau = fedopt_step(config)
    strategy = kind(eta=eta, tau=tau, **options, **strategy_options(config))
    strategy.timeout = config.round_timeout  # type: ignore[attr-defined]
    return strategy


def make_fedadam(config: RunConfig) -> Strategy:
    """FedAdam (``fedadam``) with ``fedopt-beta-1`` and ``fedopt-beta-2``."""
    return _fedopt(SeededFedAdam, config, beta_1=config.option("fedopt-beta-1"), beta_2=config.option("fedopt-beta-2"))


def make_fedyogi(config: RunConfig) -> Strategy:
    """FedYogi (``fedyogi``) with ``fedopt-beta-1`` and ``fedopt-beta-2``."""
    return _fedopt(SeededFedYogi, config, beta_1=config.option("fedopt-beta-1"), beta_2=config.option("fedopt-beta-2"))


def make_fedadagrad(config: RunConfig) -> Strategy:
    """FedAdagrad (``fedadagrad``): it fixes beta-1 = beta-2 = 0."""
    return _fedopt(SeededFedAdagrad, config)
