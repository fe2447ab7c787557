r"""FedAvgM server: Flower's FedAvgM, FedAvg with server momentum (Hsu et al., 2019).

With :math:`\Delta_t = w_{t-1} - \bar w_t` the round's pseudo-gradient (the previous
global weights minus the clients' weighted average), the server keeps
:math:`v_t = \beta v_{t-1} + \Delta_t` (:math:`v_1 = \Delta_1`) and sets
:math:`w_t = w_{t-1} - \eta\, v_t`, with :math:`\beta` = ``server-momentum`` and
:math:`\eta` = ``server-learning-rate``; :math:`\beta = 0, \eta = 1` is FedAvg. The defaults
:math:`\beta = 0.5, \eta = 0.3` (an effective step :math:`\eta / (1 - \beta) = 0.6` averaged update)
were found by ``stamen tune`` on Cora and csbm: stable on both, where Hsu et al.'s :math:`\beta = 0.9`
with :math:`\eta = 1` (ten averaged updates a step) diverged on both and :math:`\beta = 0.7` peaked
higher on Cora and then fell (benchmarks/tuning.md).

Flower's strategy takes :math:`w_0` from the weights round 1 sends. Stamen's round 1
sends none (every client builds the seeded initial model), so the strategy asks one
client for the initial model first (the query that client-level DP uses as well).
The momentum vector is server state outside the checkpoint: the algorithm's spec
says it is not resumable.
"""

from __future__ import annotations

from collections.abc import Iterable

from flwr.app import ArrayRecord, ConfigRecord, Message
from flwr.serverapp import Grid
from flwr.serverapp.strategy import FedAvgM, Strategy

from stamen.contract.run_config import RunConfig
from stamen.server.privacy import initial_arrays
from stamen.server.strategy_options import strategy_options


class SeededFedAvgM(FedAvgM):
    """Flower's FedAvgM, told the seeded initial weights when round 1 sends none.

    Args:
        timeout: seconds to wait for the client that sends the initial model.
        **fedavgm: Flower FedAvgM's arguments.
    """

    def __init__(self, timeout: float, **fedavgm) -> None:
        super().__init__(**fedavgm)
        self.timeout = timeout

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        if self.current_arrays is None and len(arrays) == 0 and self.server_opt:
            self.current_arrays = initial_arrays(grid, self.timeout)
        return super().configure_train(server_round, arrays, config, grid)


def make_strategy(config: RunConfig) -> Strategy:
    return SeededFedAvgM(
        timeout=config.round_timeout,
        server_momentum=config.option("server-momentum"),
        server_learning_rate=config.option("server-learning-rate"),
        **strategy_options(config),
    )
